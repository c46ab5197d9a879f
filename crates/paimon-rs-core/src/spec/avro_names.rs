//! Avro name validation without regular expressions (#30).
//!
//! `apache_avro` parses the writer schema in the header of every Avro file it opens, and checks
//! every record name, namespace and field name of it against the Avro specification with
//! `regex_lite`. For our manifests (a schema of ~20 records and fields per file) that check was
//! half of opening a file: profiled upsert commits spent ~2.5% of their CPU in `regex_lite`'s
//! pike VM and ~4.5% in `Reader::new` overall. The crate lets a program replace its validators
//! (process-wide, first set wins); these accept exactly what the specification's patterns
//! accept (the unit tests compare them with the crate's own regexes) with a byte scan.

use std::sync::Once;

use apache_avro::error::Details;
use apache_avro::schema::Namespace;
use apache_avro::validator::{
    set_enum_symbol_name_validator, set_record_field_name_validator, set_schema_name_validator,
    set_schema_namespace_validator, EnumSymbolNameValidator, RecordFieldNameValidator,
    SchemaNameValidator, SchemaNamespaceValidator,
};
use apache_avro::AvroResult;

/// The specification's patterns, quoted in the errors as the crate's own validators do.
const NAME_PATTERN: &str = r"^((?P<namespace>([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?)\.)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)$";
const NAMESPACE_PATTERN: &str = r"^([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?$";

/// `[A-Za-z_][A-Za-z0-9_]*`
fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphabetic() || b == b'_' => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*)?`: empty, or identifiers joined by dots.
fn is_namespace(s: &str) -> bool {
    s.is_empty() || s.split('.').all(is_identifier)
}

struct ByteScanValidator;

impl SchemaNameValidator for ByteScanValidator {
    fn validate(&self, schema_name: &str) -> AvroResult<(String, Namespace)> {
        let invalid = || Details::InvalidSchemaName(schema_name.to_string(), NAME_PATTERN).into();
        // The name is what follows the last dot; before it (when there is a dot) a namespace,
        // which the pattern allows to be empty (".x" has the namespace "").
        let (namespace, name) = match schema_name.rfind('.') {
            Some(dot) => (Some(&schema_name[..dot]), &schema_name[dot + 1..]),
            None => (None, schema_name),
        };
        if !is_identifier(name) || !namespace.is_none_or(is_namespace) {
            return Err(invalid());
        }
        Ok((name.to_string(), namespace.map(str::to_string)))
    }
}

impl SchemaNamespaceValidator for ByteScanValidator {
    fn validate(&self, namespace: &str) -> AvroResult<()> {
        if is_namespace(namespace) {
            Ok(())
        } else {
            Err(Details::InvalidNamespace(namespace.to_string(), NAMESPACE_PATTERN).into())
        }
    }
}

impl EnumSymbolNameValidator for ByteScanValidator {
    fn validate(&self, symbol: &str) -> AvroResult<()> {
        if is_identifier(symbol) {
            Ok(())
        } else {
            Err(Details::EnumSymbolName(symbol.to_string()).into())
        }
    }
}

impl RecordFieldNameValidator for ByteScanValidator {
    fn validate(&self, field_name: &str) -> AvroResult<()> {
        if is_identifier(field_name) {
            Ok(())
        } else {
            Err(Details::FieldName(field_name.to_string()).into())
        }
    }
}

/// Installs the byte-scan validators, once per process, before the first schema is parsed (the
/// crate fixes its validators at the first parse). If something else in the process set one
/// first, the crate keeps that one: validation is then only slower, never different.
pub fn install_name_validators() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = set_schema_name_validator(Box::new(ByteScanValidator));
        let _ = set_schema_namespace_validator(Box::new(ByteScanValidator));
        let _ = set_enum_symbol_name_validator(Box::new(ByteScanValidator));
        let _ = set_record_field_name_validator(Box::new(ByteScanValidator));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec_name(s: &str) -> Option<(String, Namespace)> {
        let re = SchemaNameValidator::regex(&ByteScanValidator);
        re.captures(s).map(|c| {
            (
                c["name"].to_string(),
                c.name("namespace").map(|m| m.as_str().to_string()),
            )
        })
    }

    fn agree(s: &str) {
        let ours = SchemaNameValidator::validate(&ByteScanValidator, s).ok();
        assert_eq!(ours, spec_name(s), "schema name {s:?}");
        let ns_re = SchemaNamespaceValidator::regex(&ByteScanValidator);
        let ours = SchemaNamespaceValidator::validate(&ByteScanValidator, s).is_ok();
        assert_eq!(ours, ns_re.is_match(s), "namespace {s:?}");
        let id_re = RecordFieldNameValidator::regex(&ByteScanValidator);
        let ours = RecordFieldNameValidator::validate(&ByteScanValidator, s).is_ok();
        assert_eq!(ours, id_re.is_match(s), "field name {s:?}");
        let ours = EnumSymbolNameValidator::validate(&ByteScanValidator, s).is_ok();
        assert_eq!(ours, id_re.is_match(s), "enum symbol {s:?}");
    }

    #[test]
    fn accepts_what_the_specification_accepts() {
        for s in [
            "",
            ".",
            "x",
            "_x1",
            "1x",
            "org.apache.paimon.avro.generated.record",
            ".x",
            "a.",
            "a..b",
            "a.b.c",
            "a.1b",
            "a-b",
            "ä",
            "x.",
            "..",
            "_._",
            "manifest_entry",
            "a b",
        ] {
            agree(s);
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_specification_regexes(s in "[a-c_0-1.\\-é]{0,8}") {
            agree(&s);
        }
    }
}
