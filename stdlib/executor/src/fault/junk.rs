//! `inject junk into topic T [N messages]`: records no change-event decoder
//! can accept, produced into a table's change topic: alternately bytes
//! without the registry's wire framing, and framed records naming a schema id
//! the registry does not have. They carry no key (a key would fail to decode
//! first and hide the value's problem).

use std::time::Duration;

use rdkafka::producer::{FutureProducer, FutureRecord};

use super::{Fired, Strike, count_arg, name_arg};
use crate::error::Error;
use crate::seed::Seed;

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
    for i in 0..count {
        let payload: Vec<u8> = if i % 2 == 0 {
            b"\xffnot an Avro record: lossproof junk".to_vec()
        } else {
            let mut framed = vec![0];
            framed.extend_from_slice(&UNKNOWN_SCHEMA_ID.to_be_bytes());
            framed.extend_from_slice(b"\x02\x04junk");
            framed
        };
        producer
            .send(
                FutureRecord::<(), _>::to(&topic).payload(&payload),
                Duration::from_secs(10),
            )
            .await
            .map_err(|(e, _)| Error::kafka(format!("produce to {topic}"))(e))?;
    }
    Ok(format!("produced {count} junk records into {topic}"))
}
