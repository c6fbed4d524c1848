//! The list of scenarios a run executes, in execution order.

use crate::profile::{Profile, MEMORY_IN_FLIGHT, MEMORY_VALUE_SIZE};
use crate::scenario::{Broker, Kind, Op, Scenario};

/// Every scenario of `profile` whose name contains `filter` (all when `None`), plus the floor
/// and raw-requester scenarios they are compared with. Grouped by broker so that each broker's figures are taken
/// back to back.
pub fn scenarios(profile: &Profile, filter: Option<&str>) -> Vec<Scenario> {
    let mut all = Vec::new();
    for &size in &profile.engine_value_sizes {
        for op in [Op::Set, Op::Get] {
            all.push(Scenario {
                kind: Kind::Engine,
                op,
                value_size: size,
                in_flight: 1,
                broker: None,
            });
        }
    }
    for &broker in &profile.brokers {
        for &size in &profile.value_sizes {
            for &in_flight in &profile.in_flight {
                let cell = |kind, op| Scenario {
                    kind,
                    op,
                    value_size: size,
                    in_flight,
                    broker: Some(broker),
                };
                all.push(cell(Kind::Floor, Op::Echo));
                for kind in [Kind::Server, Kind::Async, Kind::Blocking] {
                    for op in [Op::Set, Op::Get] {
                        all.push(cell(kind, op));
                    }
                }
            }
        }
    }
    if profile.memory_ops.is_some() {
        all.push(Scenario {
            kind: Kind::Memory,
            op: Op::Set,
            value_size: MEMORY_VALUE_SIZE,
            in_flight: MEMORY_IN_FLIGHT,
            broker: Some(Broker::Embedded),
        });
    }
    all.retain(|s| profile.includes(s));
    select(all, filter)
}

/// The scenario of `profile` called `name`.
pub fn find(profile: &Profile, name: &str) -> Option<Scenario> {
    scenarios(profile, None)
        .into_iter()
        .find(|s| s.name() == name)
}

fn select(all: Vec<Scenario>, filter: Option<&str>) -> Vec<Scenario> {
    let Some(filter) = filter else {
        return all;
    };
    let wanted: Vec<Scenario> = all
        .iter()
        .filter(|s| s.name().contains(filter))
        .copied()
        .collect();
    all.into_iter()
        .filter(|s| {
            wanted.contains(s)
                || wanted.iter().any(|w| {
                    w.kind != Kind::Memory && (w.floor() == Some(*s) || w.raw() == Some(*s))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_matrix_covers_every_cell_once() {
        let all = scenarios(&Profile::full(), None);
        // engine: 4 sizes x 2 ops; MQTT: 2 brokers x 3 sizes x 4 depths x 7; memory: 1.
        assert_eq!(all.len(), 8 + 2 * 3 * 4 * 7 + 1);
        let mut names: Vec<String> = all.iter().map(Scenario::name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }

    #[test]
    fn quick_skips_the_largest_cells_and_the_memory_run() {
        let quick = scenarios(&Profile::quick(), None);
        assert!(!quick
            .iter()
            .any(|s| s.value_size == 65536 && s.in_flight == 256));
        assert!(!quick.iter().any(|s| s.kind == Kind::Memory));
    }

    #[test]
    fn a_filter_brings_its_floors_along() {
        let picked = scenarios(&Profile::full(), Some("async/get/16B/64/"));
        let names: Vec<String> = picked.iter().map(Scenario::name).collect();
        assert_eq!(
            names,
            [
                "floor/echo/16B/64/embedded",
                "server/get/16B/64/embedded",
                "async/get/16B/64/embedded",
                "floor/echo/16B/64/mosquitto",
                "server/get/16B/64/mosquitto",
                "async/get/16B/64/mosquitto"
            ]
        );
        assert!(scenarios(&Profile::full(), Some("no such scenario")).is_empty());
    }
}
