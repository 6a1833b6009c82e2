//! `inject junk into topic T [N messages]`: records no change-event decoder
//! can accept, produced into a table's change topic: alternately bytes
//! without the registry's wire framing, and framed records naming a schema id
//! the registry does not have. They carry no key (a key would fail to decode
//! first and hide the value's problem), and the header [`JUNK_HEADER`] (so
//! `duplicate` counts its copies of them as junk). How many were produced is
//! counted ([`crate::run::FaultCounts::junk`]).

use std::time::Duration;

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use super::{Fired, Strike, count_arg, name_arg};
use crate::error::Error;
use crate::seed::Seed;

/// The header every junk record carries.
pub(super) const JUNK_HEADER: &str = "lossproof-junk";

/// A schema id far above any the embedded registry hands out.
const UNKNOWN_SCHEMA_ID: u32 = 0x7fff_fff0;

pub(super) async fn inject(seed: &Seed<'_>, strike: &Strike<'_>) -> Fired {
    let table = name_arg(strike.action, "table")?;
    let count = count_arg(strike.action, "count").unwrap_or(1);
    let topic = seed.names.topic("public", table);
    let producer: FutureProducer = seed
        .endpoints
        .kafka
        .client_config()
        .set("message.timeout.ms", "10000")
        .create()
        .map_err(Error::kafka("kafka producer"))?;
    let mut counts = crate::run::FaultCounts::default();
    let mut failure = None;
    for i in 0..count {
        let payload: Vec<u8> = if i % 2 == 0 {
            b"\xffnot an Avro record: lossproof junk".to_vec()
        } else {
            let mut framed = vec![0];
            framed.extend_from_slice(&UNKNOWN_SCHEMA_ID.to_be_bytes());
            framed.extend_from_slice(b"\x02\x04junk");
            framed
        };
        let headers = OwnedHeaders::new().insert(Header {
            key: JUNK_HEADER,
            value: Some("1"),
        });
        match producer
            .send(
                FutureRecord::<(), _>::to(&topic)
                    .payload(&payload)
                    .headers(headers),
                Duration::from_secs(10),
            )
            .await
        {
            Ok(_) => counts.junk += 1,
            Err((e, _)) => {
                counts.send_errors += 1;
                failure.get_or_insert(e);
            }
        }
    }
    seed.counts
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(strike.occurrence, counts);
    match failure {
        Some(e) if counts.junk == 0 => Err(Error::kafka(format!("produce to {topic}"))(e)),
        Some(e) => Ok(format!(
            "produced {} of {count} junk records into {topic} ({} failed: {e})",
            counts.junk, counts.send_errors
        )),
        None => Ok(format!("produced {count} junk records into {topic}")),
    }
}
