//! The words hosts pass in for core's values (conditions, versions), read one way for every
//! language, with one error message each.

use std::cmp::Ordering;

use super::{EventKind, OptionKind};
use crate::lease::{LeaseState, LossReason};
use crate::{ConnectionState, DeleteOutcome, Error, Hlc, Result, SetCondition};

/// How a host spells names of more than one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// `not_found` (C, Python, the CLI).
    Snake,
    /// `notFound` (JavaScript).
    Camel,
}

/// Every word list the library shows its users, by vocabulary: `condition` (canonical names),
/// `event_kind`, `delete_outcome`, `loss_reason`, `lease_state`, `option_kind` and
/// `connection_state` (the same words in every case), each in
/// `case`. Hosts export it, and their tests check their own types and constants against it, so
/// that a word added in core is missed nowhere.
///
/// ```
/// use statestore::bindings::{vocabulary, Case};
/// let words = vocabulary(Case::Camel);
/// let outcomes = &words.iter().find(|(name, _)| *name == "delete_outcome").unwrap().1;
/// assert_eq!(outcomes, &["deleted", "notFound", "valueMismatch"]);
/// ```
pub fn vocabulary(case: Case) -> Vec<(&'static str, Vec<&'static str>)> {
    let pick = |(snake, camel): (&'static str, &'static str)| match case {
        Case::Snake => snake,
        Case::Camel => camel,
    };
    vec![
        (
            "condition",
            SetCondition::NAMES.iter().map(|(c, _)| c.name()).collect(),
        ),
        (
            "event_kind",
            EventKind::ALL.iter().map(|k| k.name()).collect(),
        ),
        (
            "delete_outcome",
            DeleteOutcome::ALL.iter().map(|o| pick(o.names())).collect(),
        ),
        (
            "loss_reason",
            LossReason::ALL.iter().map(|r| pick(r.names())).collect(),
        ),
        (
            "lease_state",
            LeaseState::NAMES.iter().map(|n| pick(*n)).collect(),
        ),
        (
            "option_kind",
            OptionKind::ALL.iter().map(|k| k.name()).collect(),
        ),
        (
            "connection_state",
            ConnectionState::ALL.iter().map(|s| s.name()).collect(),
        ),
    ]
}

/// The SET condition a host named `name` for its argument `argument` (any name of
/// [`SetCondition::NAMES`], in any ASCII case); an unknown name is an invalid argument that
/// lists the accepted ones.
pub fn set_condition(name: &str, argument: &str) -> Result<SetCondition> {
    SetCondition::from_name(name).ok_or_else(|| {
        let accepted: Vec<String> = SetCondition::NAMES
            .iter()
            .flat_map(|(_, names)| names.iter().map(|n| format!("'{n}'")))
            .collect();
        Error::InvalidArgument(format!(
            "{argument}: {name:?} is not a condition; use one of {}",
            accepted.join(", ")
        ))
    })
}

/// The word of the vocabulary `list` (a name [`vocabulary`] gives, such as `delete_outcome`)
/// that a host passed as `argument`, spelt in `case`; any other word is an invalid argument
/// that lists the words.
///
/// ```
/// use statestore::bindings::{word, Case};
/// assert_eq!(word("delete_outcome", Case::Snake, "not_found", "outcome").unwrap(), "not_found");
/// let error = word("event_kind", Case::Snake, "changed", "kind").unwrap_err().to_string();
/// assert!(error.contains("kind: \"changed\" is not an event kind; use one of 'set', 'delete'"), "{error}");
/// ```
pub fn word(list: &str, case: Case, value: &str, argument: &str) -> Result<&'static str> {
    let Some((_, words)) = vocabulary(case).into_iter().find(|(name, _)| *name == list) else {
        return Err(Error::Internal(format!("no vocabulary named {list:?}")));
    };
    if let Some(found) = words.iter().find(|w| **w == value) {
        return Ok(found);
    }
    let listed: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let shown: String = value.chars().take(80).collect();
    let noun = list.replace('_', " ");
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    Err(Error::InvalidArgument(format!(
        "{argument}: {shown:?} is not {article} {noun}; use one of {}",
        listed.join(", ")
    )))
}

/// A version or fencing token a host passed as `argument`, in the service's text form
/// (`wallMs:counter:node`); anything else is an invalid argument naming it.
///
/// ```
/// use statestore::bindings::version;
/// assert_eq!(version("001732363200000:00003:StateStore", "v").unwrap().counter, 3);
/// let error = version("1.5:0:n", "fencing_token").unwrap_err().to_string();
/// assert!(error.contains("fencing_token: \"1.5:0:n\" is not a version"), "{error}");
/// ```
pub fn version(text: &str, argument: &str) -> Result<Hlc> {
    text.parse::<Hlc>().map_err(|_| {
        let shown: String = text.chars().take(80).collect();
        Error::InvalidArgument(format!(
            "{argument}: {shown:?} is not a version or fencing token; pass one the library \
             returned (its text form is wallMs:counter:node, e.g. \
             \"001732363200000:00003:StateStore\")"
        ))
    })
}

/// How two versions order, as the service orders them: wall clock, then counter (as exact
/// 64-bit integers), then node id bytes. Hosts call this instead of comparing the text (which
/// orders `"2:0:n"` after `"10:0:n"`) or converting to floating point (which loses order
/// above 2^53).
///
/// ```
/// use std::cmp::Ordering;
/// use statestore::bindings::compare_versions;
/// assert_eq!(compare_versions("2:0:n", "10:0:n").unwrap(), Ordering::Less);
/// assert!(compare_versions("2:0:n", "two").is_err());
/// ```
pub fn compare_versions(a: &str, b: &str) -> Result<Ordering> {
    Ok(version(a, "a")?.cmp(&version(b, "b")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_integers_then_node_bytes() {
        let cmp = |a, b| compare_versions(a, b).unwrap();
        assert_eq!(
            cmp("9007199254740993:0:n", "9007199254740992:0:n"),
            Ordering::Greater
        );
        assert_eq!(
            cmp("1:18446744073709551615:n", "1:18446744073709551614:n"),
            Ordering::Greater
        );
        assert_eq!(cmp("1:0:b", "1:0:a"), Ordering::Greater);
        assert_eq!(
            cmp("1:0:n:with:colons", "1:0:n:with:colons"),
            Ordering::Equal
        );
        assert_eq!(cmp("1:0:\u{e9}", "1:0:\u{ffff}"), Ordering::Less);
    }

    #[test]
    fn garbage_is_an_invalid_argument_naming_the_side() {
        for garbage in [
            "",
            "abc",
            "1:2",
            ":1:n",
            "1::n",
            "-1:0:n",
            "1.5:0:n",
            "18446744073709551616:0:n",
            " 1:0:n",
        ] {
            for (a, b, side) in [(garbage, "1:0:n", "a: "), ("1:0:n", garbage, "b: ")] {
                match compare_versions(a, b) {
                    Err(Error::InvalidArgument(message)) => {
                        assert!(message.starts_with(side), "{message}")
                    }
                    other => panic!("{garbage:?}: {other:?}"),
                }
            }
        }
    }
}
