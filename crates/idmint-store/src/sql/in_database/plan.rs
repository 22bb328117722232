//! The function `install` creates, as a plan: the constants it is made of (from the layout,
//! the ID space and the request) and the SQL text of its PL/pgSQL body, with the first value
//! of each worker's sequence. Nothing here talks to the database; `super` runs the statements.

use std::time::Duration;

use idmint_core::{FieldKind, IdSpaceRecord, Layout};

use super::{invalid, InstallRequest};
use crate::{Error, Result};

/// The constants the function is made of, from the layout and the space.
#[derive(Debug, Clone)]
pub(super) struct Plan {
    /// How many worker IDs the function gets.
    pub(super) workers: u64,
    epoch_ms: u64,
    tick_ms: u64,
    time_shift: u32,
    seq_bits: u32,
    seq_shift: u32,
    max_tick: u64,
    worker_shift: u32,
    dc_bits: u64,
    shard: Option<(u32, u64)>,
    /// How many worker IDs the layout has.
    pub(super) worker_count: u64,
    max_lead_ticks: u64,
    max_wait_ms: u64,
    issues_from_tick: u64,
    layout: Layout,
}

impl Plan {
    pub(super) fn new(
        layout: &Layout,
        space: &IdSpaceRecord,
        request: &InstallRequest,
    ) -> Result<Self> {
        let Some(worker) = layout.field(FieldKind::Worker) else {
            return Err(invalid(format!(
                "the layout `{}` has no worker field: the function needs worker IDs of its own \
                 (one per session drawing IDs at once), apart from the nodes'",
                layout.spec()
            )));
        };
        let worker_count = layout.worker_count();
        if request.workers == 0 || request.workers > worker_count.min(1024) {
            return Err(Error::InvalidArgument {
                name: "workers",
                reason: format!(
                    "{} is not between 1 and {} (the layout's worker IDs, at most 1,024)",
                    request.workers,
                    worker_count.min(1024)
                ),
            });
        }
        let seq = layout
            .field(FieldKind::Seq)
            .ok_or_else(|| invalid("the layout has no seq field"))?;
        let tick_ms = layout.unit().millis();
        let dc_bits = match layout.field(FieldKind::Dc) {
            Some(dc) => space.space.datacenter << dc.shift,
            None => 0,
        };
        let issues_from_tick = match space.issues_from_ms {
            0 => 0,
            ms => layout.tick_at(ms).unwrap_or(0),
        };
        Ok(Self {
            workers: request.workers,
            epoch_ms: layout.epoch_ms(),
            tick_ms,
            time_shift: layout.time_shift(),
            seq_bits: seq.bits,
            seq_shift: seq.shift,
            max_tick: layout.max_tick(),
            worker_shift: worker.shift,
            dc_bits,
            shard: layout
                .field(FieldKind::Shard)
                .map(|f| (f.shift, f.max_value())),
            worker_count,
            max_lead_ticks: (duration_ms(request.max_lead) / tick_ms).max(1),
            max_wait_ms: duration_ms(request.max_wait),
            issues_from_tick,
            layout: layout.clone(),
        })
    }

    /// The first value of a worker's sequence: its first tick strictly above the worker's
    /// high-water mark, and not before the ID space's first tick.
    pub(super) fn first_value(&self, hwm_ms: u64) -> u64 {
        let above_hwm = if hwm_ms < self.epoch_ms {
            0
        } else {
            self.layout.tick_at(hwm_ms).map_or(self.max_tick, |t| t + 1)
        };
        above_hwm.max(self.issues_from_tick).min(self.max_tick) << self.seq_bits
    }

    /// The statements that create both functions. `sequences` pairs each worker ID with its
    /// sequence's OID, in claim order.
    pub(super) fn function_sql(
        &self,
        schema: &str,
        ns: &str,
        sequences: &[(u64, u32)],
    ) -> Vec<String> {
        let oids: Vec<String> = sequences.iter().map(|(_, oid)| oid.to_string()).collect();
        let keys: Vec<String> = sequences.iter().map(|(w, _)| w.to_string()).collect();
        let fixed: Vec<String> = sequences
            .iter()
            .map(|(w, _)| (self.dc_bits | (w << self.worker_shift)).to_string())
            .collect();
        let (shard_check, shard_bits) = match self.shard {
            Some((shift, max)) => (
                format!(
                    "IF shard IS NULL OR shard < 0 OR shard > {max} THEN\n    \
                     RAISE EXCEPTION 'idmint: shard % is outside 0..{max}', shard USING ERRCODE = '22023';\n  \
                     END IF;"
                ),
                format!(" | (shard << {shift})"),
            ),
            None => (
                "IF shard IS DISTINCT FROM 0 THEN\n    \
                 RAISE EXCEPTION 'idmint: shard % given, but the layout has no shard field (give 0)', shard USING ERRCODE = '22023';\n  \
                 END IF;"
                    .to_owned(),
                String::new(),
            ),
        };
        let Plan {
            epoch_ms,
            tick_ms,
            time_shift,
            seq_bits,
            seq_shift,
            max_tick,
            max_lead_ticks,
            max_wait_ms,
            ..
        } = *self;
        let seq_mask = (1u64 << seq_bits) - 1;
        let (oids, keys_list, fixed) = (oids.join(","), keys.join(","), fixed.join(","));
        let n = sequences.len();
        let lock = advisory_key(ns);
        let classid = u32::from_le_bytes(lock.to_le_bytes());
        let slot = format!("idmint.{ns}_slot");
        let now = format!(
            "(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - {epoch_ms}) / {tick_ms}"
        );
        let body = format!(
            r#"
DECLARE
  seqs CONSTANT oid[] := '{{{oids}}}';
  workers CONSTANT int[] := '{{{keys_list}}}';
  fixed CONSTANT bigint[] := '{{{fixed}}}';
  i int;
  v bigint;
  t bigint;
  now_t bigint;
  deadline timestamptz;
BEGIN
  {shard_check}
  -- This session's worker ID: claimed once, and locked again (re-entrantly) at every call, so
  -- no other session can be using it while this call does.
  i := nullif(current_setting('{slot}', true), '')::int;
  IF i IS NULL OR i < 1 OR i > {n} OR NOT pg_try_advisory_lock({lock}, workers[i]) THEN
    -- One this session holds already: a claim whose transaction rolled back keeps its lock
    -- (session-level) but loses the setting above.
    SELECT array_position(workers, l.objid::bigint::int) INTO i FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
       AND l.classid = {classid}::oid AND l.objsubid = 2 AND l.objid::bigint::int = ANY (workers)
     ORDER BY 1 LIMIT 1;
    IF i IS NULL THEN
      FOR j IN 1..{n} LOOP
        IF pg_try_advisory_lock({lock}, workers[j]) THEN
          i := j;
          EXIT;
        END IF;
      END LOOP;
    END IF;
    IF i IS NULL THEN
      RAISE EXCEPTION 'idmint: all {n} worker IDs of {ns}_next_id are in use by other sessions'
        USING ERRCODE = '53000',
              HINT = 'install it with more worker IDs (idmint sql install --workers) or draw from fewer sessions at once';
    END IF;
    PERFORM set_config('{slot}', i::text, false);
  END IF;
  -- The commit of the caller's transaction then flushes the sequence's log record.
  PERFORM pg_current_xact_id();
  v := nextval(seqs[i]::regclass);
  t := v >> {seq_bits};
  now_t := {now};
  IF t < now_t THEN
    v := setval(seqs[i]::regclass, now_t << {seq_bits});
    t := now_t;
  ELSIF t > now_t + {max_lead_ticks} THEN
    -- Ahead of the clock by more than max_lead: it stepped back, or more than 2^{seq_bits} IDs
    -- per tick were drawn for a while. Wait for it, a bounded time.
    deadline := clock_timestamp() + interval '{max_wait_ms} milliseconds';
    LOOP
      PERFORM pg_sleep(least(0.05, greatest(0.001, (t - {max_lead_ticks} - now_t) * {tick_ms} / 1000.0)));
      now_t := {now};
      EXIT WHEN t <= now_t + {max_lead_ticks};
      IF clock_timestamp() > deadline THEN
        RAISE EXCEPTION 'idmint: the clock is % ms behind the IDs {ns}_next_id issued', (t - now_t) * {tick_ms}
          USING ERRCODE = '55000', HINT = 'the database server''s clock stepped back; calls go on once it is past';
      END IF;
    END LOOP;
  END IF;
  IF t > {max_tick} THEN
    RAISE EXCEPTION 'idmint: the layout ran out of time' USING ERRCODE = '22003';
  END IF;
  RETURN (t << {time_shift}) | fixed[i]{shard_bits} | ((v & {seq_mask}) << {seq_shift});
END
"#
        );
        vec![
            format!(
                "CREATE FUNCTION {schema}.{ns}_next_id(shard bigint) RETURNS bigint \
                 LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER \
                 SET search_path = pg_catalog, pg_temp AS $idmint${body}$idmint$"
            ),
            format!(
                "COMMENT ON FUNCTION {schema}.{ns}_next_id(bigint) IS 'idmint: a snowflake ID of \
                 layout {spec} (epoch {epoch_ms} ms) on worker IDs {workers} of {wc}; made by idmint \
                 sql install, removed by idmint sql uninstall'",
                spec = self.layout.spec(),
                workers = keys_list,
                wc = self.worker_count,
            ),
            format!(
                "CREATE FUNCTION {schema}.{ns}_next_id() RETURNS bigint LANGUAGE sql VOLATILE \
                 PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp \
                 AS $idmint$SELECT {schema}.{ns}_next_id(0)$idmint$"
            ),
            format!("REVOKE ALL ON FUNCTION {schema}.{ns}_next_id(bigint) FROM PUBLIC"),
            format!("REVOKE ALL ON FUNCTION {schema}.{ns}_next_id() FROM PUBLIC"),
        ]
    }
}

/// The first key of the sessions' advisory locks on the function's worker IDs (the second is
/// the worker ID): 32 bits of the namespace's hash, apart from the lease lock's 64-bit key.
fn advisory_key(ns: &str) -> i32 {
    let key = crate::sql::postgres::lock_key(&format!("sql-function:{ns}"));
    i32::from_le_bytes((key as u64 as u32).to_le_bytes())
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use idmint_core::IdSpace;

    fn plan(spec: &str, workers: u64) -> Result<Plan> {
        let layout = Layout::parse(spec)?;
        let space = IdSpaceRecord::first(IdSpace::of(&layout, 0));
        let request = InstallRequest {
            space: space.clone(),
            workers,
            max_lead: Duration::from_secs(1),
            max_wait: Duration::from_secs(1),
            grant_to: Vec::new(),
        };
        Plan::new(&layout, &space, &request)
    }

    #[test]
    fn a_layout_without_worker_ids_or_too_many_workers_is_refused() {
        assert!(plan("instagram", 1).is_err());
        assert!(plan("time:41@1ms,worker:3,seq:12", 9).is_err());
        assert!(plan("time:41@1ms,worker:3,seq:12", 0).is_err());
        assert!(plan("time:41@1ms,worker:3,seq:12", 8).is_ok());
    }

    #[test]
    fn sequences_start_above_the_high_water_mark() {
        let plan = plan("time:41@1ms,worker:10,seq:12", 4).unwrap();
        assert_eq!(plan.first_value(0), 0);
        let hwm = plan.epoch_ms + 5_000;
        assert_eq!(plan.first_value(hwm), 5_001 << 12);
    }

    #[test]
    fn the_function_places_every_field_of_the_layout() {
        let plan = plan("time:41@1ms,dc:5,worker:5,seq:12", 2).unwrap();
        let sql = plan.function_sql("public", "ns", &[(3, 16_400), (4, 16_401)]);
        let body = &sql[0];
        assert!(
            body.contains("'{16400,16401}'") && body.contains("'{3,4}'"),
            "{body}"
        );
        // worker 3 at shift 12, dc 0.
        assert!(
            body.contains(&format!("'{{{},{}}}'", 3 << 12, 4 << 12)),
            "{body}"
        );
        assert!(
            body.contains("(t << 22)") && body.contains("((v & 4095) << 0)"),
            "{body}"
        );
        assert!(body.contains("SECURITY DEFINER") && body.contains("search_path"));
    }
}
