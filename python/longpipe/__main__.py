from ._entry import console_main

console_main()
