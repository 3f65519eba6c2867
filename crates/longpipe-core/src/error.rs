//! The input error every component's spec resolution returns: the field path and what
//! was expected (`link[2].loss.p: must be a probability in [0, 1], got 1.5`).
//!
//! A leaf module: components resolve their own specs and return this error without
//! importing the scenario layer.

/// A scenario input error: the field path and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {msg}")]
pub struct ScenarioError {
    pub path: String,
    pub msg: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, msg: impl Into<String>) -> Self {
        ScenarioError {
            path: path.into(),
            msg: msg.into(),
        }
    }
}

/// `Err(ScenarioError::new(path, msg))`.
pub fn err<T>(path: impl Into<String>, msg: impl Into<String>) -> Result<T, ScenarioError> {
    Err(ScenarioError::new(path, msg))
}

/// Checks a probability in [0, 1].
pub fn check_prob(path: impl Into<String>, p: f64) -> Result<f64, ScenarioError> {
    if !(0.0..=1.0).contains(&p) {
        return err(path, format!("must be a probability in [0, 1], got {p}"));
    }
    Ok(p)
}
