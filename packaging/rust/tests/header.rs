//! The crate mirrors the installed headers whole: every enumerator and
//! numeric #define in `ffi::CONSTANTS` with its value, every struct in
//! `ffi::layouts()` field for field at the header's offsets and sizes, every
//! function in `ffi::FUNCTIONS`, and every status, scoring, logits type and
//! specialization named by the safe types. The header's side comes from
//! packaging/c/header_facts.py, which reads the names from the headers and
//! the layout from a C compiler, so a status, field or function added to a
//! header fails this test until it is mirrored.
use alphamoe_router::{ffi, LogitsType, Scoring, Specialization, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

struct Facts {
    /// "enum TYPE" or "define" -> {name: value}
    constants: BTreeMap<String, BTreeMap<String, i64>>,
    /// struct -> (size, [(field, offset, size)])
    structs: BTreeMap<String, (usize, Vec<(String, usize, usize)>)>,
    functions: BTreeSet<String>,
}

fn header_facts() -> Facts {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../c/header_facts.py");
    let out = Command::new("python3")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {}", script.display(), e));
    assert!(out.status.success(), "{} failed: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    let mut facts = Facts { constants: BTreeMap::new(), structs: BTreeMap::new(), functions: BTreeSet::new() };
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let number = |i: usize| words[i].parse::<i64>().unwrap_or_else(|_| panic!("bad line {:?}", line));
        match words[0] {
            "enum" => {
                facts.constants.entry(format!("enum {}", words[1])).or_default().insert(words[2].into(), number(3));
            }
            "define" => {
                facts.constants.entry("define".into()).or_default().insert(words[1].into(), number(2));
            }
            "struct" => {
                facts.structs.entry(words[1].into()).or_default().0 = number(2) as usize;
            }
            "field" => {
                let (name, field) = words[1].split_once('.').unwrap();
                let entry = facts.structs.entry(name.into()).or_default();
                entry.1.push((field.into(), number(2) as usize, number(3) as usize));
            }
            "function" => {
                facts.functions.insert(words[1].into());
            }
            _ => panic!("unknown line {:?}", line),
        }
    }
    assert!(
        !facts.constants.is_empty() && !facts.structs.is_empty() && !facts.functions.is_empty(),
        "header_facts printed nothing"
    );
    facts
}

#[test]
fn ffi_constants_are_the_headers() {
    let facts = header_facts();
    let header: BTreeMap<&str, i64> =
        facts.constants.values().flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), *v))).collect();
    let crate_side: BTreeMap<&str, i64> = ffi::CONSTANTS.iter().copied().collect();
    assert_eq!(crate_side.len(), ffi::CONSTANTS.len(), "a constant is listed twice in ffi");
    let differ: Vec<String> = header
        .iter()
        .filter(|(name, value)| crate_side.get(*name) != Some(*value))
        .map(|(name, value)| format!("{} = {} in the header, {:?} in ffi", name, value, crate_side.get(name)))
        .chain(crate_side.keys().filter(|name| !header.contains_key(*name)).map(|name| format!("{} only in ffi", name)))
        .collect();
    assert!(differ.is_empty(), "ffi::CONSTANTS against the installed headers:\n{}", differ.join("\n"));
}

#[test]
fn ffi_structs_are_the_headers() {
    let facts = header_facts();
    let crate_side: BTreeMap<String, (usize, Vec<(String, usize, usize)>)> = ffi::layouts()
        .into_iter()
        .map(|(name, size, fields)| {
            (name.to_string(), (size, fields.into_iter().map(|(f, o, s)| (f.to_string(), o, s)).collect()))
        })
        .collect();
    assert_eq!(
        crate_side.keys().collect::<Vec<_>>(),
        facts.structs.keys().collect::<Vec<_>>(),
        "structs of ffi (left) and of the headers (right)"
    );
    for (name, header) in &facts.structs {
        assert_eq!(&crate_side[name], header, "{}: ffi (left) against the header (right), (size, [(field, offset, size)])", name);
    }
}

#[test]
fn ffi_functions_are_the_headers() {
    let facts = header_facts();
    let header: Vec<&str> = facts.functions.iter().map(String::as_str).collect();
    let crate_side: BTreeSet<&str> = ffi::FUNCTIONS.iter().copied().collect();
    assert_eq!(crate_side.len(), ffi::FUNCTIONS.len(), "a function is declared twice in ffi");
    assert_eq!(crate_side.into_iter().collect::<Vec<_>>(), header, "functions of ffi (left) and of the headers (right)");
}

#[test]
fn safe_types_name_every_enumerator() {
    let facts = header_facts();
    let enums: [(&str, &dyn Fn(i32) -> Option<&'static str>); 4] = [
        ("alphamoe_status", &|v| Status(v).name()),
        ("alphamoe_scoring", &|v| Scoring(v).name()),
        ("alphamoe_logits_type", &|v| LogitsType(v).name()),
        ("alphamoe_specialization", &|v| Specialization(v).name()),
    ];
    for (c_enum, name_of) in enums {
        let values = facts.constants.get(&format!("enum {}", c_enum)).unwrap_or_else(|| panic!("no enum {}", c_enum));
        for (name, &value) in values {
            assert_eq!(name_of(value as i32), Some(name.as_str()), "{} {} = {}", c_enum, name, value);
        }
        // Nothing named past the header's values.
        let known = (-1..=64).filter(|&v| name_of(v).is_some()).count();
        assert_eq!(known, values.len(), "{}: the crate names {} values, the header {}", c_enum, known, values.len());
    }
    for (name, &value) in &facts.constants["enum alphamoe_status"] {
        let status = Status(value as i32);
        // The library says the header's name; Display and Debug say it too.
        assert!(status.message().starts_with(&format!("{}: ", name)), "{}: the library says {:?}", name, status.message());
        assert_eq!(status.to_string(), status.message());
        assert_eq!(format!("{:?}", status), *name);
    }
    assert_eq!(format!("{:?}", Status(1000)), "Status(1000)");
    assert!(Status(1000).message().starts_with("ALPHAMOE_ERROR_UNKNOWN"), "{}", Status(1000));
}
