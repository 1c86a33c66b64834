//! Writes a direction's Mahimahi-format log, and its flow log (alcc_trace::flow) when asked,
//! on its own thread, so that a slow disk (dirty-page
//! throttling can stall a `write` for 100 ms) never delays packets. The relay collects events
//! in a batch and hands the batch over once per loop iteration.

use std::fs::File;
use std::io;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use alcc_trace::{FlowId, LogHeader, LogWriter};

use crate::link::LinkEvent;

/// One log line, without its packet (the flow is `FlowId::Other` unless flows are logged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Opportunity { at_us: u64, bytes: u64 },
    Arrival { at_us: u64, bytes: u64, flow: FlowId },
    Drop { at_us: u64, bytes: u64, flow: FlowId },
    Departure { at_us: u64, bytes: u64, arrived_us: u64, flow: FlowId },
}

/// The writers of the thread: the Mahimahi-format log, the flow log, or both.
struct Writers {
    log: Option<LogWriter<File>>,
    flows: Option<LogWriter<File>>,
}

/// How often the writer thread flushes, so that a running log can be followed.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The relay's end of a log: a batch of events and the channel to the writer thread.
#[derive(Debug)]
pub(crate) struct Logger {
    batch: Vec<Record>,
    tx: Option<Sender<Vec<Record>>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl Logger {
    /// Starts the writer thread for the Mahimahi-format log and/or the flow log; it writes the
    /// headers at once.
    pub(crate) fn start(
        log: Option<(File, LogHeader)>,
        flows: Option<(File, LogHeader)>,
        name: &str,
    ) -> io::Result<Logger> {
        let (tx, rx) = channel();
        let open =
            |l: Option<(File, LogHeader)>| l.map(|(file, header)| LogWriter::new(file, &header)).transpose();
        let writers = Writers { log: open(log)?, flows: open(flows)? };
        let writer = std::thread::Builder::new()
            .name(format!("alcc-log-{name}"))
            .spawn(move || write_all(writers, rx))?;
        Ok(Logger { batch: Vec::with_capacity(1024), tx: Some(tx), writer: Some(writer) })
    }

    /// Records one event of the link, of a packet of `flow`.
    pub(crate) fn event<P>(&mut self, event: &LinkEvent<P>, flow: FlowId) {
        let record = match event {
            LinkEvent::Opportunity { at_us } => {
                Record::Opportunity { at_us: *at_us, bytes: crate::OPPORTUNITY_BYTES }
            }
            LinkEvent::Arrival { at_us, bytes } => Record::Arrival { at_us: *at_us, bytes: *bytes, flow },
            LinkEvent::Drop { at_us, packet } => Record::Drop { at_us: *at_us, bytes: packet.bytes, flow },
            LinkEvent::Departure { at_us, packet } => {
                Record::Departure { at_us: *at_us, bytes: packet.bytes, arrived_us: packet.arrival_us, flow }
            }
        };
        self.batch.push(record);
    }

    /// Hands the events recorded so far to the writer thread.
    pub(crate) fn hand_over(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(1024));
        if let Some(tx) = &self.tx {
            // A writer that failed has quit; its error is reported by `finish`.
            let _ = tx.send(batch);
        }
    }

    /// Hands over the rest, waits for the writer to flush and close, and returns its error.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.hand_over();
        self.tx = None;
        match self.writer.take().map(|w| w.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the log writer panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Logger {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

fn write_all(mut w: Writers, rx: Receiver<Vec<Record>>) -> io::Result<()> {
    let mut last_flush = Instant::now();
    for batch in rx {
        for r in batch {
            if let Some(log) = w.log.as_mut() {
                match r {
                    Record::Opportunity { at_us, bytes } => log.opportunity(at_us, bytes)?,
                    Record::Arrival { at_us, bytes, .. } => log.arrival(at_us, bytes)?,
                    Record::Drop { at_us, bytes, .. } => log.drop_packets(at_us, 1, bytes)?,
                    Record::Departure { at_us, bytes, arrived_us, .. } => {
                        log.departure(at_us, bytes, arrived_us)?
                    }
                }
            }
            if let Some(log) = w.flows.as_mut() {
                match r {
                    Record::Opportunity { at_us, bytes } => log.opportunity(at_us, bytes)?,
                    Record::Arrival { at_us, bytes, flow } => log.arrival_of(at_us, bytes, &flow)?,
                    Record::Drop { at_us, bytes, flow } => log.drop_of(at_us, bytes, &flow)?,
                    Record::Departure { at_us, bytes, arrived_us, flow } => {
                        log.departure_of(at_us, bytes, arrived_us, &flow)?
                    }
                }
            }
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            for log in [w.log.as_mut(), w.flows.as_mut()].into_iter().flatten() {
                log.flush()?;
            }
            last_flush = Instant::now();
        }
    }
    for log in [w.log, w.flows].into_iter().flatten() {
        log.finish()?.sync_data().or(Ok::<(), io::Error>(()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::Queued;

    #[test]
    fn writes_every_event_in_order_with_the_header() {
        let path = std::env::temp_dir().join(format!("alcc-logger-test-{}", std::process::id()));
        let header = LogHeader {
            title: "alcc link (test)".into(),
            propagation_delay_us: Some(5_000),
            ..LogHeader::default()
        };
        let flows_path = path.with_extension("flows");
        let flows_header = LogHeader { unit: alcc_trace::TimeUnit::Micros, ..header.clone() };
        let mut logger = Logger::start(
            Some((File::create(&path).unwrap(), header)),
            Some((File::create(&flows_path).unwrap(), flows_header)),
            "test",
        )
        .unwrap();
        let packet = Queued { payload: (), bytes: 1500, arrival_us: 2_000 };
        let flow = FlowId::Ports { protocol: 6, src: 9000, dst: 40000 };
        logger.event(&LinkEvent::Arrival::<()> { at_us: 2_000, bytes: 1500 }, flow);
        logger.hand_over();
        logger.event(&LinkEvent::<()>::Opportunity { at_us: 3_000 }, FlowId::Other);
        logger.event(&LinkEvent::Departure { at_us: 3_000, packet: packet.clone() }, flow);
        logger.event(&LinkEvent::Drop { at_us: 3_500, packet }, FlowId::Icmp);
        logger.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let flows = std::fs::read_to_string(&flows_path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&flows_path).unwrap();
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(body, vec!["2 + 1500", "3 # 1500", "3 - 1500 1", "3 d 1 1500"]);
        assert!(text.contains("# alcc propagation delay us: 5000"), "{text}");
        let body: Vec<&str> = flows.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            vec![
                "2000 + 1500 tcp:9000:40000",
                "3000 # 1500",
                "3000 - 1500 1000 tcp:9000:40000",
                "3500 d 1 1500 icmp"
            ]
        );
    }
}
