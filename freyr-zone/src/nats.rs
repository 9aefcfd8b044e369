//! [`NatsBus`]: the bus on a NATS server with JetStream.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, message::PublishMessage, stream};
use futures_util::StreamExt;
use tokio::runtime::Runtime;

use crate::bus::{Bus, BusError, Inbound, Position};
use crate::message::ZoneId;

/// How long the server keeps message ids to drop repeats: longer than any restart of a zone.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

/// A [`Bus`] on NATS JetStream through `async-nats`: one stream (`name`) with one subject per
/// destination zone (`<name>.zone.<z>`); every publish carries the `Nats-Msg-Id` header
/// ((source zone, destination, tick, sequence): see [`Message::id`](crate::Message::id)), so
/// the server keeps one copy of a message published twice within [`DUPLICATE_WINDOW`]. The
/// stream is file-backed, so a server restart loses nothing it acknowledged; the client
/// reconnects by itself, and a publish that failed meanwhile is repeated by the zone. A zone's
/// position is the stream sequence: it reads its subject through an ordered consumer from a
/// start sequence, recreated when it is asked to read from elsewhere.
///
/// The tokio runtime (one worker thread) lives inside; the zone runtime stays synchronous.
/// Only loopback addresses are used by the crate's own tests and example.
pub struct NatsBus {
    runtime: Runtime,
    context: jetstream::Context,
    stream: String,
    acks: Vec<jetstream::context::PublishAckFuture>,
    reader: Option<Reader>,
}

/// An open ordered consumer on one zone's subject, and the position it delivers next.
struct Reader {
    zone: ZoneId,
    next: Position,
    messages: consumer::pull::Ordered,
}

fn unavailable(what: &str, e: impl std::fmt::Display) -> BusError {
    BusError::Unavailable(format!("{what}: {e}"))
}

impl NatsBus {
    /// Connects to the server at `url` (e.g. `nats://127.0.0.1:4222`) and creates the stream
    /// `stream` if it does not exist (file storage, subjects `<stream>.zone.*`).
    ///
    /// # Errors
    ///
    /// [`BusError::Unavailable`] if the server cannot be reached within `connect_timeout` or
    /// refuses the stream: a loud failure, never a silent fallback.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use freyr_zone::{BusError, NatsBus};
    ///
    /// // Nothing listens on port 1 of the loopback address.
    /// let bus = NatsBus::connect("nats://127.0.0.1:1", "ZONES", Duration::from_secs(2));
    /// assert!(matches!(bus, Err(BusError::Unavailable(_))));
    /// ```
    pub fn connect(url: &str, stream: &str, connect_timeout: Duration) -> Result<Self, BusError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| unavailable("tokio runtime", e))?;
        let context = runtime.block_on(async {
            let client = tokio::time::timeout(
                connect_timeout,
                async_nats::ConnectOptions::new()
                    .connection_timeout(connect_timeout)
                    .connect(url),
            )
            .await
            .map_err(|_| unavailable(url, "no answer"))?
            .map_err(|e| unavailable(url, e))?;
            let context = jetstream::new(client);
            context
                .get_or_create_stream(stream::Config {
                    name: stream.to_owned(),
                    subjects: vec![format!("{stream}.zone.*")],
                    storage: stream::StorageType::File,
                    duplicate_window: DUPLICATE_WINDOW,
                    ..Default::default()
                })
                .await
                .map_err(|e| unavailable("creating the stream", e))?;
            Ok::<_, BusError>(context)
        })?;
        Ok(NatsBus {
            runtime,
            context,
            stream: stream.to_owned(),
            acks: Vec::new(),
            reader: None,
        })
    }

    /// Deletes the stream `stream` (a test's clean start), if it exists.
    ///
    /// # Errors
    ///
    /// [`BusError::Unavailable`] if the server does not answer.
    pub fn delete_stream(&mut self, stream: &str) -> Result<(), BusError> {
        self.reader = None;
        self.runtime.block_on(async {
            match self.context.delete_stream(stream).await {
                Ok(_) => Ok(()),
                Err(e) if e.to_string().contains("not found") => Ok(()),
                Err(e) => Err(unavailable("deleting the stream", e)),
            }
        })
    }

    fn subject(&self, zone: ZoneId) -> String {
        format!("{}.zone.{zone}", self.stream)
    }
}

impl Bus for NatsBus {
    fn publish(&mut self, dest: ZoneId, id: &str, payload: &[u8]) -> Result<(), BusError> {
        let subject = self.subject(dest);
        let message = PublishMessage::build()
            .payload(payload.to_vec().into())
            .message_id(id);
        let ack = self
            .runtime
            .block_on(self.context.send_publish(subject, message))
            .map_err(|e| unavailable("publish", e))?;
        self.acks.push(ack);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), BusError> {
        let acks = std::mem::take(&mut self.acks);
        self.runtime.block_on(async {
            let mut first_error = None;
            for ack in acks {
                if let Err(e) = ack.await {
                    first_error.get_or_insert_with(|| unavailable("publish acknowledgement", e));
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    fn read(
        &mut self,
        zone: ZoneId,
        from: Position,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Inbound>, BusError> {
        let from = from.max(1);
        if self
            .reader
            .as_ref()
            .is_none_or(|r| r.zone != zone || r.next != from)
        {
            self.reader = None;
            let subject = self.subject(zone);
            let stream = self.stream.clone();
            let messages = self.runtime.block_on(async {
                let stream = self
                    .context
                    .get_stream(&stream)
                    .await
                    .map_err(|e| unavailable("opening the stream", e))?;
                let consumer = stream
                    .create_consumer(consumer::pull::OrderedConfig {
                        filter_subject: subject,
                        deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                            start_sequence: from,
                        },
                        ..Default::default()
                    })
                    .await
                    .map_err(|e| unavailable("creating a consumer", e))?;
                consumer
                    .messages()
                    .await
                    .map_err(|e| unavailable("reading a consumer", e))
            })?;
            self.reader = Some(Reader {
                zone,
                next: from,
                messages,
            });
        }
        let reader = self.reader.as_mut().expect("opened above");
        let deadline = Instant::now() + wait;
        let mut out = Vec::new();
        let result = self.runtime.block_on(async {
            while out.len() < max {
                // The first message may take until the deadline; the rest only what is there.
                let left = match out.is_empty() {
                    true => deadline.saturating_duration_since(Instant::now()),
                    false => Duration::ZERO,
                };
                let next = match tokio::time::timeout(left, reader.messages.next()).await {
                    Ok(Some(next)) => next,
                    Ok(None) => return Err(unavailable("reading", "the consumer ended")),
                    Err(_) => return Ok(()),
                };
                let message = next.map_err(|e| unavailable("reading", e))?;
                let position = message
                    .info()
                    .map_err(|e| unavailable("message info", e))?
                    .stream_sequence;
                reader.next = position + 1;
                out.push(Inbound {
                    position,
                    payload: message.payload.to_vec(),
                });
            }
            Ok(())
        });
        if let Err(e) = result {
            self.reader = None;
            if out.is_empty() {
                return Err(e);
            }
        }
        Ok(out)
    }
}
