//! Controllers by name: `by_name("copa:delta=0.5")`, `build("verus:r=4", &config)`.
//!
//! Every algorithm registers one [`Entry`] in [`ENTRIES`]; the engine, the simulator and the
//! command line all build controllers here, so a new algorithm is one line in this table.

use crate::controller::{Config, Controller, ReceiverModel};
use crate::copa::Copa;
use crate::cubic::Cubic;
use crate::fixed::Fixed;
use crate::mdi::Mdi;
use crate::reno::Reno;
use crate::spec::{Params, SpecError};
use crate::sprout::{SproutAck, SproutParams, SproutReceiver, SproutSender};
use crate::verus::Verus;

type SenderFactory = fn(&mut Params, &Config) -> Result<Box<dyn Controller>, SpecError>;
type ReceiverFactory = fn(&mut Params, &Config) -> Result<Box<dyn ReceiverModel>, SpecError>;

/// One registered algorithm.
pub struct Entry {
    /// Its name in specifications.
    pub name: &'static str,
    /// One line about it, with its parameters.
    pub about: &'static str,
    sender: SenderFactory,
    receiver: Option<ReceiverFactory>,
}

impl Entry {
    /// Whether the algorithm keeps a model at the receiver (and so needs framed or UDP mode).
    pub fn needs_receiver(&self) -> bool {
        self.receiver.is_some()
    }
}

/// Every algorithm alcc knows.
pub static ENTRIES: &[Entry] = &[
    Entry {
        name: "fixed",
        about: "constant window and rate; window=PACKETS|inf (inf), rate=MBIT/S (none)",
        sender: |p, c| Ok(Box::new(Fixed::from_params(p, c)?)),
        receiver: None,
    },
    Entry {
        name: "copa",
        about: "Copa (NSDI 2018); delta=D (0.5), mode=nocheck|drain|default (nocheck: the authors' mode switch; drain: ours with the drain check, earlier name auto), gate=reference|cwnd (reference: ceil(cwnd) packets in flight, as the authors' sender)",
        sender: |p, c| Ok(Box::new(Copa::from_params(p, c)?)),
        receiver: None,
    },
    Entry {
        name: "reno",
        about: "TCP Reno (RFC 5681, RFC 3465 byte counting); no parameters",
        sender: |p, c| Ok(Box::new(Reno::from_params(p, c)?)),
        receiver: None,
    },
    Entry {
        name: "cubic",
        about: "CUBIC (RFC 9438); c=C (0.4), beta=B (0.7), fast_convergence=on|off (on)",
        sender: |p, c| Ok(Box::new(Cubic::from_params(p, c)?)),
        receiver: None,
    },
    Entry {
        name: "sprout",
        about: "Sprout (NSDI 2013), forecasts from the receiver; target=MS (100), confidence=PERCENTILE (5), clock=arrival|half_rtt (arrival, the reference's), report=arrival|tick (arrival, the reference's)",
        sender: |p, c| Ok(Box::new(SproutSender::new(SproutParams::from_params(p)?, c))),
        receiver: Some(|p, c| Ok(Box::new(SproutReceiver::new(SproutParams::from_params(p)?, c)))),
    },
    Entry {
        name: "sprout-ack",
        about: "Sprout run at the sender alone, its model fed from ACK timing (any TCP client); parameters as sprout",
        sender: |p, c| Ok(Box::new(SproutAck::new(SproutParams::from_params(p)?, c))),
        receiver: None,
    },
    Entry {
        name: "verus",
        about: "Verus (SIGCOMM 2015), delay-profile epochs; r=RATIO of Dmax/Dmin (6)",
        sender: |p, c| Ok(Box::new(Verus::from_params(p, c)?)),
        receiver: None,
    },
    Entry {
        name: "mdi",
        about: "MDI, a Markov model of another algorithm (ALCC paper 4.3); model=FILE (the built-in model of our Verus; `alcc mdi train` makes others), seed=N (the flow's)",
        sender: |p, c| Ok(Box::new(Mdi::from_params(p, c)?)),
        receiver: None,
    },
];

/// The registered names, in table order.
pub fn names() -> Vec<&'static str> {
    ENTRIES.iter().map(|e| e.name).collect()
}

/// The entry for a specification's name.
pub fn entry(spec: &str) -> Result<&'static Entry, SpecError> {
    let params = Params::parse(spec)?;
    find(params.name())
}

fn find(name: &str) -> Result<&'static Entry, SpecError> {
    ENTRIES
        .iter()
        .find(|e| e.name == name)
        .ok_or_else(|| SpecError::UnknownName { name: name.to_string(), known: names().join(", ") })
}

/// Builds the sender-side controller for `spec` with the default [`Config`].
pub fn by_name(spec: &str) -> Result<Box<dyn Controller>, SpecError> {
    build(spec, &Config::default())
}

/// Builds the sender-side controller for `spec`.
pub fn build(spec: &str, config: &Config) -> Result<Box<dyn Controller>, SpecError> {
    let mut params = Params::parse(spec)?;
    let entry = find(params.name())?;
    let controller = (entry.sender)(&mut params, config)?;
    params.finish()?;
    Ok(controller)
}

/// Builds the receiver-side model for `spec`, or `None` if the algorithm has none.
///
/// The receiver takes the same parameters as the sender, so one spec string configures both:
/// the sender's factory must take every parameter of the algorithm (so that [`build`] accepts
/// the spec), and the receiver's factory then sees the whole parameter list again.
pub fn build_receiver(spec: &str, config: &Config) -> Result<Option<Box<dyn ReceiverModel>>, SpecError> {
    let mut params = Params::parse(spec)?;
    let entry = find(params.name())?;
    let Some(receiver) = entry.receiver else {
        return Ok(None);
    };
    // Validate the spec exactly as `build` does, on a copy: taking a parameter removes it, and
    // the receiver must still see the values given.
    let mut sender_view = params.clone();
    (entry.sender)(&mut sender_view, config)?;
    sender_view.finish()?;
    let model = receiver(&mut params, config)?;
    Ok(Some(model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_registered_and_rejects_unknown() {
        let c = by_name("fixed:window=10").unwrap();
        assert_eq!(c.name(), "fixed");
        assert_eq!(c.decision().window, 10 * Config::default().mss);
        assert_eq!(by_name("fixed").unwrap().decision().window, u64::MAX);
        assert_eq!(by_name("fixed:window=inf").unwrap().decision().window, u64::MAX);
        let err = by_name("vegas").err().unwrap();
        assert!(matches!(err, SpecError::UnknownName { .. }), "{err}");
        assert!(err.to_string().contains("fixed"));
        assert!(matches!(by_name("fixed:speed=3").err().unwrap(), SpecError::UnknownParam { .. }));
    }

    #[test]
    fn receiver_sees_the_parameters_given() {
        let config = Config::default();
        assert!(build_receiver("fixed", &config).unwrap().is_none());
        let r = build_receiver("sprout:confidence=20,target=60", &config).unwrap().unwrap();
        assert_eq!(r.name(), "sprout");
        assert!(matches!(build_receiver("sprout:confidence=90", &config), Err(SpecError::BadValue { .. })));
        assert!(matches!(build_receiver("sprout:foo=1", &config), Err(SpecError::UnknownParam { .. })));
        assert!(by_name("sprout:target=60").is_ok());
    }

    #[test]
    fn every_name_builds_with_defaults() {
        for name in names() {
            let c = by_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(c.name(), name);
            let r = build_receiver(name, &Config::default()).unwrap();
            assert_eq!(r.is_some(), entry(name).unwrap().needs_receiver());
        }
    }
}
