//! Per-call rule parameters: `'key=value,key=value'`, keys named as datatrove's constructor
//! arguments. A number sets a threshold, `none` disables the rule (datatrove's `None`).

use crate::error::TokqError;

pub struct Params<'s> {
    function: &'static str,
    items: Vec<(&'s str, &'s str)>,
}

impl<'s> Params<'s> {
    pub fn parse(function: &'static str, spec: &'s str) -> Result<Self, TokqError> {
        let mut items = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').ok_or_else(|| TokqError::Argument {
                function,
                cause: format!("parameter '{item}' must be KEY=VALUE"),
            })?;
            items.push((k.trim(), v.trim()));
        }
        Ok(Self { function, items })
    }

    pub fn items(&self) -> impl Iterator<Item = (&'s str, &'s str)> + '_ {
        self.items.iter().copied()
    }

    pub fn error(&self, cause: String) -> TokqError {
        TokqError::Argument { function: self.function, cause }
    }

    pub fn unknown(&self, key: &str, known: &[&str]) -> TokqError {
        self.error(format!("unknown parameter '{key}' (known: {})", known.join(", ")))
    }

    /// A threshold: a number, or `none` to disable the rule.
    pub fn threshold(&self, key: &str, value: &str) -> Result<Option<f64>, TokqError> {
        if value.eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(Some(v)),
            _ => Err(self.error(format!("{key} must be a number or none, got '{value}'"))),
        }
    }

    pub fn flag(&self, key: &str, value: &str) -> Result<bool, TokqError> {
        match value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.error(format!("{key} must be true or false, got '{value}'"))),
        }
    }

    pub fn integer(&self, key: &str, value: &str) -> Result<i64, TokqError> {
        value.parse().map_err(|_| self.error(format!("{key} must be an integer, got '{value}'")))
    }
}

/// datatrove guards most rules with `if self.threshold and ...`: `None` and 0 both disable.
pub(crate) fn truthy(t: Option<f64>) -> Option<f64> {
    t.filter(|v| *v != 0.0)
}
