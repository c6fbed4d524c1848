//! Loading the scenarios and the catalogue of operations (`ops.json`), and checking every step
//! against the catalogue before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The directory of the shared scenarios (`tests/scenarios`).
pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

/// The catalogue and every scenario of `tests/scenarios`; panics if the directory or
/// `ops.json` cannot be read (a scenario that cannot be parsed is returned as such).
pub fn load_shared() -> (Catalogue, Vec<Loaded>) {
    let dir = scenarios_dir();
    let catalogue = Catalogue::load(&dir).expect("load tests/scenarios/ops.json");
    let loaded = load_all(&dir, &catalogue).expect("read tests/scenarios");
    (catalogue, loaded)
}

/// One operation of the catalogue.
#[derive(Debug, Clone)]
pub struct OpSpec {
    /// Arguments every step of this op must give.
    pub required: Vec<String>,
    /// Arguments it may give.
    pub optional: Vec<String>,
    /// The fields of its result.
    pub result: Vec<String>,
}

/// The catalogue of operations (`ops.json`).
#[derive(Debug, Clone)]
pub struct Catalogue {
    /// Every op by name.
    pub ops: BTreeMap<String, OpSpec>,
}

impl Catalogue {
    /// Reads `ops.json` from `dir`.
    pub fn load(dir: &Path) -> Result<Catalogue, String> {
        let path = dir.join("ops.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let ops = json
            .get("ops")
            .and_then(Value::as_object)
            .ok_or("ops.json: no \"ops\" object")?;
        let names = |spec: &Value, field: &str| -> Result<Vec<String>, String> {
            spec.get(field)
                .and_then(Value::as_array)
                .ok_or(format!("ops.json: no {field:?} list"))?
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .ok_or(format!("ops.json: a non-string in {field:?}"))
                })
                .collect()
        };
        let mut catalogue = BTreeMap::new();
        for (name, spec) in ops {
            catalogue.insert(
                name.clone(),
                OpSpec {
                    required: names(spec, "required")?,
                    optional: names(spec, "optional")?,
                    result: names(spec, "result")?,
                },
            );
        }
        Ok(Catalogue { ops: catalogue })
    }

    /// The spec of `op`, if the catalogue has it.
    pub fn op(&self, op: &str) -> Option<&OpSpec> {
        self.ops.get(op)
    }
}

/// What a step must give.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Failure with this error code name (`ErrorCode::name()`).
    Error(String),
    /// Success, and these result fields match.
    Fields(Map<String, Value>),
}

/// One step of a scenario.
#[derive(Debug, Clone)]
pub struct Step {
    /// Position in the scenario, from 0.
    pub index: usize,
    /// The operation.
    pub op: String,
    /// The operation's arguments (everything but `op`, `expect`, `save` and `comment`).
    pub args: Map<String, Value>,
    /// What it must give.
    pub expect: Expect,
    /// Variables to store: (variable, result field).
    pub save: Vec<(String, String)>,
    /// Free text.
    pub comment: Option<String>,
}

impl Step {
    /// `step 3 (set: "the comment")`, for reports.
    pub fn label(&self) -> String {
        match &self.comment {
            Some(comment) => format!("step {} ({}: {comment:?})", self.index, self.op),
            None => format!("step {} ({})", self.index, self.op),
        }
    }
}

/// A scenario, checked against the catalogue.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name: the path under `tests/scenarios` without `.json`.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// Clients connected with default options before the first step.
    pub clients: Vec<String>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// A scenario file: the scenario, or why it cannot run (which is a failure, not a skip).
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The scenario's name (from its path, if the file could not be read).
    pub name: String,
    /// The scenario or the problem.
    pub scenario: Result<Scenario, String>,
}

/// Loads every scenario under `dir` (every `*.json` except `ops.json`), sorted by name.
pub fn load_all(dir: &Path, catalogue: &Catalogue) -> Result<Vec<Loaded>, String> {
    let mut files = Vec::new();
    collect_json(dir, &mut files)?;
    files.sort();
    let mut loaded = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(dir)
            .map_err(|e| e.to_string())?
            .with_extension("");
        if relative == Path::new("ops") {
            continue;
        }
        let name = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let scenario = std::fs::read_to_string(&file)
            .map_err(|e| format!("{}: {e}", file.display()))
            .and_then(|text| {
                serde_json::from_str::<Value>(&text).map_err(|e| format!("{}: {e}", file.display()))
            })
            .and_then(|json| parse(&name, &json, catalogue));
        loaded.push(Loaded { name, scenario });
    }
    Ok(loaded)
}

fn collect_json(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.is_dir() {
            collect_json(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    Ok(())
}

/// Checks one scenario's JSON against the format and the catalogue.
pub fn parse(name: &str, json: &Value, catalogue: &Catalogue) -> Result<Scenario, String> {
    let object = json.as_object().ok_or("a scenario must be a JSON object")?;
    for field in object.keys() {
        if !["name", "description", "clients", "steps"].contains(&field.as_str()) {
            return Err(format!("unknown scenario field {field:?}"));
        }
    }
    let declared = object
        .get("name")
        .and_then(Value::as_str)
        .ok_or("no \"name\"")?;
    if declared != name {
        return Err(format!(
            "\"name\" is {declared:?} but the file is {name}.json: they must agree"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-/".contains(&b))
    {
        return Err("a name may only hold a-z, 0-9, '_', '-' and '/'".into());
    }
    let description = object
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.trim().is_empty())
        .ok_or("no \"description\"")?
        .to_owned();
    let clients = match object.get("clients") {
        None => Vec::new(),
        Some(list) => list
            .as_array()
            .ok_or("\"clients\" must be a list of names")?
            .iter()
            .map(|c| {
                c.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| "\"clients\" must be a list of names".to_owned())
            })
            .collect::<Result<_, _>>()?,
    };
    let steps = object
        .get("steps")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or("no \"steps\" (a non-empty list)")?
        .iter()
        .enumerate()
        .map(|(index, step)| {
            parse_step(index, step, catalogue).map_err(|e| format!("step {index}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    Ok(Scenario {
        name: name.to_owned(),
        description,
        clients,
        steps,
    })
}

fn parse_step(index: usize, json: &Value, catalogue: &Catalogue) -> Result<Step, String> {
    let object = json.as_object().ok_or("a step must be a JSON object")?;
    let op = object
        .get("op")
        .and_then(Value::as_str)
        .ok_or("no \"op\"")?
        .to_owned();
    let spec = catalogue
        .op(&op)
        .ok_or_else(|| format!("unknown op {op:?} (not in ops.json)"))?;
    let mut args = Map::new();
    let mut expect = Expect::Fields(Map::new());
    let mut save = Vec::new();
    let mut comment = None;
    for (field, value) in object {
        match field.as_str() {
            "op" => {}
            "comment" => comment = Some(value.as_str().ok_or("\"comment\" must be text")?.into()),
            "expect" => expect = parse_expect(value, spec)?,
            "save" => {
                for (var, from) in value.as_object().ok_or("\"save\" must be an object")? {
                    let from = from
                        .as_str()
                        .ok_or("\"save\" maps variable names to result field names")?;
                    if !spec.result.iter().any(|f| f == from) {
                        return Err(format!("{op} has no result field {from:?} to save"));
                    }
                    save.push((var.clone(), from.to_owned()));
                }
            }
            arg if spec.required.iter().chain(&spec.optional).any(|a| a == arg) => {
                args.insert(field.clone(), value.clone());
            }
            arg => return Err(format!("{op} has no argument {arg:?}")),
        }
    }
    if let Some(missing) = spec.required.iter().find(|a| !args.contains_key(*a)) {
        return Err(format!("{op} needs the argument {missing:?}"));
    }
    Ok(Step {
        index,
        op,
        args,
        expect,
        save,
        comment,
    })
}

fn parse_expect(value: &Value, spec: &OpSpec) -> Result<Expect, String> {
    let object = value.as_object().ok_or("\"expect\" must be an object")?;
    if let Some(code) = object.get("error") {
        if object.len() != 1 {
            return Err("an error expectation has no other fields".into());
        }
        let code = code
            .as_str()
            .ok_or("\"error\" must be an error code name")?;
        return Ok(Expect::Error(code.to_owned()));
    }
    if let Some(field) = object.keys().find(|f| !spec.result.contains(f)) {
        return Err(format!("the result has no field {field:?}"));
    }
    Ok(Expect::Fields(object.clone()))
}
