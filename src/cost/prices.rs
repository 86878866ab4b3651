//! Optional prices (issue 15): `.specrun/config.json` may hold a price table, USD per
//! million tokens per model, so the ledger's figures also show in dollars and `--max-usd`
//! can cap them. Tokens stay the unit: a broken table is reported and only the dollars go.
//!
//! ```json
//! {"prices": {"claude-sonnet-4": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheCreation": 3.75}}}
//! ```
//! A key prices every model it is a prefix of (the longest key wins), so
//! `claude-sonnet-4` prices `claude-sonnet-4-5-20250929`. `cacheRead` and `cacheCreation`
//! default to 0.1× and 1.25× `input` (the API's cache multipliers).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::io::project::{config_path, CONFIG_FILE, MAX_CONFIG_BYTES};
use crate::model::state::ledger::Tokens;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_creation: f64,
}

impl Price {
    pub(crate) fn usd(&self, t: &Tokens) -> f64 {
        (t.input as f64 * self.input
            + t.output as f64 * self.output
            + t.cache_read as f64 * self.cache_read
            + t.cache_creation as f64 * self.cache_creation)
            / 1e6
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Prices {
    pub table: BTreeMap<String, Price>,
}

/// Dollars for some tokens, with the models no price covered.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Usd {
    pub priced: f64,
    pub unpriced_models: Vec<String>,
}

impl Prices {
    /// The price of `model`: its exact key, else the longest key it starts with.
    pub(crate) fn for_model(&self, model: &str) -> Option<&Price> {
        self.table.get(model).or_else(|| {
            self.table
                .iter()
                .filter(|(k, _)| model.starts_with(k.as_str()))
                .max_by_key(|(k, _)| k.len())
                .map(|(_, p)| p)
        })
    }

    pub(crate) fn usd(&self, by_model: &BTreeMap<String, Tokens>) -> Usd {
        let mut out = Usd::default();
        for (model, tokens) in by_model {
            match self.for_model(model) {
                Some(p) => out.priced += p.usd(tokens),
                None if tokens.total() > 0 => out.unpriced_models.push(model.clone()),
                None => {}
            }
        }
        out
    }
}

/// The project's price table: `Ok(None)` without a config or without `prices`; `Err`
/// says what is wrong, with the file and the field.
pub(crate) fn load(root: &Path) -> Result<Option<Prices>, String> {
    let path = config_path(root);
    let shown = format!(".specrun/{CONFIG_FILE}");
    // The store's reader: a regular file only (no FIFO, no link), bounded in size.
    let bytes = match crate::io::store::read_prefix(&path, MAX_CONFIG_BYTES, true) {
        Ok(None) => return Ok(None),
        Ok(Some(bytes)) => bytes,
        Err(e) => return Err(e.to_string()),
    };
    let text = String::from_utf8(bytes).map_err(|_| format!("{shown} is not UTF-8"))?;
    parse(&text).map_err(|e| format!("{shown}: {e}"))
}

/// Parse a config text's price table.
pub(crate) fn parse(text: &str) -> Result<Option<Prices>, String> {
    let doc: Value = serde_json::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("not valid JSON ({e})"))?;
    let Some(doc) = doc.as_object() else {
        return Err("the top level must be an object".into());
    };
    let table = match doc.get("prices") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(t)) => t,
        Some(_) => return Err("`prices` must be an object of model → price".into()),
    };
    let mut prices = Prices::default();
    for (model, entry) in table {
        prices.table.insert(model.clone(), price(model, entry)?);
    }
    Ok(Some(prices))
}

fn price(model: &str, entry: &Value) -> Result<Price, String> {
    let Some(map) = entry.as_object() else {
        return Err(format!("`prices.{model}` must be an object"));
    };
    const FIELDS: &[&str] = &["input", "output", "cacheRead", "cacheCreation"];
    if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "`prices.{model}.{unknown}` is not a price field (input, output, cacheRead, cacheCreation)"
        ));
    }
    let field = |name: &str| -> Result<Option<f64>, String> {
        match map.get(name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some)
                .ok_or_else(|| {
                    format!("`prices.{model}.{name}` must be a non-negative number of USD per million tokens")
                }),
        }
    };
    let required =
        |name: &str| field(name)?.ok_or_else(|| format!("`prices.{model}.{name}` is missing"));
    let input = required("input")?;
    Ok(Price {
        input,
        output: required("output")?,
        cache_read: field("cacheRead")?.unwrap_or(input * 0.1),
        cache_creation: field("cacheCreation")?.unwrap_or(input * 1.25),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_by_exact_then_longest_prefix() {
        let p = parse(r#"{"prices": {"claude": {"input": 1, "output": 2}, "claude-opus": {"input": 15, "output": 75, "cacheRead": 1.5, "cacheCreation": 18.75}}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(p.for_model("claude-opus-4-1").unwrap().input, 15.0);
        assert_eq!(p.for_model("claude-haiku").unwrap().cache_read, 0.1);
        assert_eq!(p.for_model("claude-haiku").unwrap().cache_creation, 1.25);
        assert!(p.for_model("gpt").is_none());
        let mut by_model = BTreeMap::new();
        by_model.insert(
            "claude-opus-4".to_string(),
            Tokens {
                input: 1_000_000,
                output: 100_000,
                cache_read: 2_000_000,
                cache_creation: 0,
            },
        );
        by_model.insert(
            "other".to_string(),
            Tokens {
                input: 5,
                ..Default::default()
            },
        );
        let usd = p.usd(&by_model);
        assert!((usd.priced - (15.0 + 7.5 + 3.0)).abs() < 1e-9, "{usd:?}");
        assert_eq!(usd.unpriced_models, vec!["other".to_string()]);
    }

    #[test]
    fn errors_name_the_field() {
        let e = |t: &str| parse(t).unwrap_err();
        assert!(e("{").contains("not valid JSON"));
        assert!(e(r#"{"prices": []}"#).contains("`prices` must be an object"));
        assert!(e(r#"{"prices": {"m": {"input": -1, "output": 1}}}"#)
            .contains("`prices.m.input` must be a non-negative"));
        assert!(e(r#"{"prices": {"m": {"input": 1}}}"#).contains("`prices.m.output` is missing"));
        assert!(
            e(r#"{"prices": {"m": {"input": 1, "output": "2"}}}"#).contains("`prices.m.output`")
        );
        assert!(
            e(r#"{"prices": {"m": {"input": 1, "output": 2, "ouput": 3}}}"#)
                .contains("`prices.m.ouput` is not a price field")
        );
        assert_eq!(parse(r#"{"other": 1}"#).unwrap(), None);
    }
}
