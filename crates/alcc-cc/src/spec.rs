//! Controller specifications: `name` or `name:key=value,key=value`.

use thiserror::Error;

/// Why a controller specification was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// No algorithm has this name.
    #[error("unknown congestion controller `{name}` (known: {known})")]
    UnknownName {
        /// The name asked for.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// A `key=value` pair the algorithm does not take.
    #[error("`{name}` takes no parameter `{key}` (it takes: {accepted})")]
    UnknownParam {
        /// The algorithm.
        name: String,
        /// The parameter given.
        key: String,
        /// The parameters it does take, comma-separated.
        accepted: String,
    },
    /// A parameter whose value is malformed or out of range.
    #[error("`{name}`: bad value `{value}` for `{key}`: {why}")]
    BadValue {
        /// The algorithm.
        name: String,
        /// The parameter.
        key: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// The text is not of the form `name[:key=value[,key=value]...]`.
    #[error("malformed controller spec `{0}`: expected name[:key=value,...]")]
    Malformed(String),
}

/// A parsed specification: the algorithm's name and its `key=value` parameters.
///
/// Algorithms read their parameters with the `take_*` methods and call [`Params::finish`],
/// which rejects anything left over, so a misspelt parameter is an error, not a silent default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    name: String,
    pairs: Vec<(String, String)>,
    accepted: Vec<&'static str>,
}

impl Params {
    /// Parses `name[:key=value[,key=value]...]`.
    pub fn parse(spec: &str) -> Result<Params, SpecError> {
        let malformed = || SpecError::Malformed(spec.to_string());
        let spec_trimmed = spec.trim();
        let (name, rest) = match spec_trimmed.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (spec_trimmed, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(malformed());
        }
        let mut pairs = Vec::new();
        if let Some(rest) = rest {
            for pair in rest.split(',') {
                let (k, v) = pair.split_once('=').ok_or_else(malformed)?;
                let (k, v) = (k.trim(), v.trim());
                if k.is_empty() || v.is_empty() {
                    return Err(malformed());
                }
                if pairs.iter().any(|(seen, _)| seen == k) {
                    return Err(malformed());
                }
                pairs.push((k.to_string(), v.to_string()));
            }
        }
        Ok(Params { name: name.to_ascii_lowercase(), pairs, accepted: Vec::new() })
    }

    /// The algorithm's name, lower-cased.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Takes a floating-point parameter, `default` when absent; it must lie in `[min, max]`.
    pub fn take_f64(
        &mut self,
        key: &'static str,
        default: f64,
        min: f64,
        max: f64,
    ) -> Result<f64, SpecError> {
        self.accepted.push(key);
        let Some(raw) = self.remove(key) else {
            return Ok(default);
        };
        let value: f64 = raw.parse().map_err(|_| self.bad(key, &raw, "not a number"))?;
        if !value.is_finite() || value < min || value > max {
            return Err(self.bad(key, &raw, &format!("must be between {min} and {max}")));
        }
        Ok(value)
    }

    /// Takes an integer parameter, `default` when absent; it must lie in `[min, max]`.
    pub fn take_u64(
        &mut self,
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, SpecError> {
        self.accepted.push(key);
        let Some(raw) = self.remove(key) else {
            return Ok(default);
        };
        let value: u64 = raw.parse().map_err(|_| self.bad(key, &raw, "not a whole number"))?;
        if value < min || value > max {
            return Err(self.bad(key, &raw, &format!("must be between {min} and {max}")));
        }
        Ok(value)
    }

    /// Takes a string parameter that must be one of `choices`; `default` when absent.
    pub fn take_choice(
        &mut self,
        key: &'static str,
        default: &'static str,
        choices: &[&'static str],
    ) -> Result<&'static str, SpecError> {
        self.accepted.push(key);
        let Some(raw) = self.remove(key) else {
            return Ok(default);
        };
        choices
            .iter()
            .copied()
            .find(|c| c.eq_ignore_ascii_case(&raw))
            .ok_or_else(|| self.bad(key, &raw, &format!("must be one of {}", choices.join(", "))))
    }

    /// Takes a string parameter as given (a file path, say); `None` when absent.
    pub fn take_string(&mut self, key: &'static str) -> Option<String> {
        self.accepted.push(key);
        self.remove(key)
    }

    /// A [`SpecError::BadValue`] for `key`: for parameters an algorithm checks itself.
    pub fn bad_value(&self, key: &str, value: &str, why: &str) -> SpecError {
        self.bad(key, value, why)
    }

    /// Fails if a parameter was given that no `take_*` call asked for.
    pub fn finish(self) -> Result<(), SpecError> {
        match self.pairs.into_iter().next() {
            None => Ok(()),
            Some((key, _)) => Err(SpecError::UnknownParam {
                name: self.name,
                key,
                accepted: if self.accepted.is_empty() { "nothing".into() } else { self.accepted.join(", ") },
            }),
        }
    }

    fn remove(&mut self, key: &str) -> Option<String> {
        let at = self.pairs.iter().position(|(k, _)| k.eq_ignore_ascii_case(key))?;
        Some(self.pairs.remove(at).1)
    }

    fn bad(&self, key: &str, value: &str, why: &str) -> SpecError {
        SpecError::BadValue { name: self.name.clone(), key: key.into(), value: value.into(), why: why.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_params() {
        let mut p = Params::parse("Copa:delta=0.25").unwrap();
        assert_eq!(p.name(), "copa");
        assert_eq!(p.take_f64("delta", 0.5, 0.001, 10.0).unwrap(), 0.25);
        p.finish().unwrap();
    }

    #[test]
    fn defaults_apply_when_absent() {
        let mut p = Params::parse("verus").unwrap();
        assert_eq!(p.take_f64("r", 6.0, 1.0, 100.0).unwrap(), 6.0);
        assert_eq!(p.take_u64("n", 3, 0, 9).unwrap(), 3);
        p.finish().unwrap();
    }

    #[test]
    fn rejects_leftovers_and_bad_values() {
        let mut p = Params::parse("copa:detla=0.5").unwrap();
        p.take_f64("delta", 0.5, 0.001, 10.0).unwrap();
        let err = p.finish().unwrap_err();
        assert!(matches!(err, SpecError::UnknownParam { ref key, .. } if key == "detla"), "{err}");
        assert!(err.to_string().contains("delta"));

        let mut p = Params::parse("copa:delta=abc").unwrap();
        assert!(matches!(p.take_f64("delta", 0.5, 0.001, 10.0), Err(SpecError::BadValue { .. })));
        let mut p = Params::parse("copa:delta=-1").unwrap();
        assert!(matches!(p.take_f64("delta", 0.5, 0.001, 10.0), Err(SpecError::BadValue { .. })));
        let mut p = Params::parse("copa:delta=NaN").unwrap();
        assert!(p.take_f64("delta", 0.5, 0.001, 10.0).is_err());
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", ":x=1", "copa:", "copa:delta", "copa:delta=", "copa:a=1,a=2", "co pa"] {
            assert!(matches!(Params::parse(bad), Err(SpecError::Malformed(_))), "{bad:?}");
        }
    }
}
