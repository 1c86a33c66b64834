//! Writes a direction's Mahimahi-format log on its own thread, so that a slow disk (dirty-page
//! throttling can stall a `write` for 100 ms) never delays packets. The relay collects events
//! in a batch and hands the batch over once per loop iteration.

use std::fs::File;
use std::io;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use alcc_trace::{LogHeader, LogWriter};

use crate::link::LinkEvent;

/// One log line, without its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Record {
    Opportunity { at_us: u64, bytes: u64 },
    Arrival { at_us: u64, bytes: u64 },
    Drop { at_us: u64, bytes: u64 },
    Departure { at_us: u64, bytes: u64, arrived_us: u64 },
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
    /// Starts the writer thread; it writes the header at once.
    pub(crate) fn start(file: File, header: LogHeader, name: &str) -> io::Result<Logger> {
        let (tx, rx) = channel();
        let writer = std::thread::Builder::new()
            .name(format!("alcc-log-{name}"))
            .spawn(move || write_all(LogWriter::new(file, &header)?, rx))?;
        Ok(Logger { batch: Vec::with_capacity(1024), tx: Some(tx), writer: Some(writer) })
    }

    /// Records one event of the link.
    pub(crate) fn event<P>(&mut self, event: &LinkEvent<P>) {
        let record = match event {
            LinkEvent::Opportunity { at_us } => {
                Record::Opportunity { at_us: *at_us, bytes: crate::OPPORTUNITY_BYTES }
            }
            LinkEvent::Arrival { at_us, bytes } => Record::Arrival { at_us: *at_us, bytes: *bytes },
            LinkEvent::Drop { at_us, packet } => Record::Drop { at_us: *at_us, bytes: packet.bytes },
            LinkEvent::Departure { at_us, packet } => {
                Record::Departure { at_us: *at_us, bytes: packet.bytes, arrived_us: packet.arrival_us }
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

fn write_all(mut log: LogWriter<File>, rx: Receiver<Vec<Record>>) -> io::Result<()> {
    let mut last_flush = Instant::now();
    for batch in rx {
        for r in batch {
            match r {
                Record::Opportunity { at_us, bytes } => log.opportunity(at_us, bytes)?,
                Record::Arrival { at_us, bytes } => log.arrival(at_us, bytes)?,
                Record::Drop { at_us, bytes } => log.drop_packets(at_us, 1, bytes)?,
                Record::Departure { at_us, bytes, arrived_us } => log.departure(at_us, bytes, arrived_us)?,
            }
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            log.flush()?;
            last_flush = Instant::now();
        }
    }
    let file = log.finish()?;
    file.sync_data().or(Ok(()))
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
        let mut logger = Logger::start(File::create(&path).unwrap(), header, "test").unwrap();
        let packet = Queued { payload: (), bytes: 1500, arrival_us: 2_000 };
        logger.event(&LinkEvent::Arrival::<()> { at_us: 2_000, bytes: 1500 });
        logger.hand_over();
        logger.event(&LinkEvent::<()>::Opportunity { at_us: 3_000 });
        logger.event(&LinkEvent::Departure { at_us: 3_000, packet: packet.clone() });
        logger.event(&LinkEvent::Drop { at_us: 3_500, packet });
        logger.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let body: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(body, vec!["2 + 1500", "3 # 1500", "3 - 1500 1", "3 d 1 1500"]);
        assert!(text.contains("# alcc propagation delay us: 5000"), "{text}");
    }
}
