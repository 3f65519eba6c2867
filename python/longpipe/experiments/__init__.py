"""Paper reproductions: one module per seed paper, each with ``main(quick, out, jobs)``."""

REGISTRY = {
    "hybla": "longpipe.experiments.hybla",
    "wcdma": "longpipe.experiments.wcdma",
    "gateway": "longpipe.experiments.gateway",
    "peach": "longpipe.experiments.peach",
    "atm": "longpipe.experiments.atm",
    "crosscheck": "longpipe.experiments.crosscheck",
    "crosscheck-linux": "longpipe.experiments.crosscheck_linux",
}
