//! Per-call rule parameters: `'key=value,key=value'`, keys named as datatrove's constructor
//! arguments. A number sets a threshold, `none` disables the rule (datatrove's `None`).

use crate::error::TokqError;

/// How one parameter sets a filter: `(filter, params, key, value)`; the value is read through
/// [`Params::threshold`], [`Params::flag`] or [`Params::integer`], which name the key when it is
/// malformed.
pub type Setter<F> = fn(&mut F, &Params<'_>, &str, &str) -> Result<(), TokqError>;

/// A filter's parameters, each key once with its setter: the one list that both sets the
/// filter and names the known keys in an error.
pub type Keys<F> = [(&'static str, Setter<F>)];

/// A [`Keys`] entry for the filter's field of the same name as the key, read by `Params::$read`
/// (`threshold`, `flag`, `integer` or `count`).
macro_rules! field {
    ($field:ident, $read:ident) => {
        (stringify!($field), |f, p, k, v| p.$read(k, v).map(|x| f.$field = x))
    };
}
pub(crate) use field;

/// Sets a parameter that no table entry names (a pattern such as `top_N_gram`): `None` when
/// the key is not one of its pattern's either.
pub type Other<F> = fn(&mut F, &Params<'_>, &str, &str) -> Option<Result<(), TokqError>>;

/// A parsed `'key=value,...'` spec, for one function.
pub struct Params<'s> {
    function: &'static str,
    items: Vec<(&'s str, &'s str)>,
}

impl<'s> Params<'s> {
    /// Splits `spec` into `key=value` items; `function` names the SQL function in errors.
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

    /// Sets each given parameter on `filter` through its entry in `keys`; `other` may take a key
    /// the table does not hold (a pattern such as `top_N_gram`, described by `patterns`), else
    /// the key is refused, naming the known ones.
    pub fn apply_or<F>(&self, keys: &Keys<F>, mut filter: F, other: Other<F>, patterns: &str) -> Result<F, TokqError> {
        for &(k, v) in &self.items {
            let set = match keys.iter().find(|(name, _)| *name == k) {
                Some((_, set)) => set(&mut filter, self, k, v),
                None => other(&mut filter, self, k, v).unwrap_or_else(|| {
                    let known: Vec<&str> = keys.iter().map(|(name, _)| *name).collect();
                    Err(self.error(format!("unknown parameter '{k}' (known: {}{patterns})", known.join(", "))))
                }),
            };
            set?;
        }
        Ok(filter)
    }

    /// [`Params::apply_or`] for a filter whose keys are all in its table.
    pub fn apply<F>(&self, keys: &Keys<F>, filter: F) -> Result<F, TokqError> {
        self.apply_or(keys, filter, |_, _, _, _| None, "")
    }

    /// An argument error of this function.
    pub fn error(&self, cause: String) -> TokqError {
        TokqError::Argument { function: self.function, cause }
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

    /// `true` or `false`.
    pub fn flag(&self, key: &str, value: &str) -> Result<bool, TokqError> {
        match value.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.error(format!("{key} must be true or false, got '{value}'"))),
        }
    }

    /// A whole number that is not negative.
    pub fn count(&self, key: &str, value: &str) -> Result<usize, TokqError> {
        usize::try_from(self.integer(key, value)?).map_err(|_| self.error(format!("{key} must be at least 0, got {value}")))
    }

    /// A whole number.
    pub fn integer(&self, key: &str, value: &str) -> Result<i64, TokqError> {
        value.parse().map_err(|_| self.error(format!("{key} must be an integer, got '{value}'")))
    }
}

/// datatrove guards most rules with `if self.threshold and ...`: `None` and 0 both disable.
pub(crate) fn truthy(t: Option<f64>) -> Option<f64> {
    t.filter(|v| *v != 0.0)
}
