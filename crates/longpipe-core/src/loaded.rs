//! Files a scenario names (a schedule's CSV, a Mahimahi trace): the core never reads
//! files itself; the front end reads each one, relative to the scenario file, and hands
//! its text over beside the key that names it (`loaded = { file, text }`).

use crate::error::{err, ScenarioError};
use schemars::JsonSchema;
use serde::Deserialize;

/// The text of a file the front end read for the core (`loaded = { file, text }`),
/// which never reads files itself. `file` must equal the key that names the file, so
/// that content loaded for another file is never used.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Loaded {
    pub file: String,
    pub text: String,
}

/// Returns the text of `file` from `loaded`, or a message saying it is missing.
pub fn loaded_text<'a>(
    file: &str,
    loaded: Option<&'a Loaded>,
    path: &str,
) -> Result<&'a str, ScenarioError> {
    match loaded {
        Some(l) if l.file == file => Ok(&l.text),
        Some(l) => err(
            format!("{path}.loaded.file"),
            format!(
                "the content is that of {:?}, not of {file:?}: load the scenario again",
                l.file
            ),
        ),
        None => err(
            path,
            format!(
                "the content of {file:?} was not loaded: files named in a scenario are read by \
                 the longpipe front end (longpipe run, longpipe.run), relative to the scenario file"
            ),
        ),
    }
}
