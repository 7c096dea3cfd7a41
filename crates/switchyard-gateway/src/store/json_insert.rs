//! The log writer's inserts for a small batch on SQLite: all of the batch's rows
//! for one table travel as one JSON array bound to one parameter, which SQLite
//! unpacks itself (`jsonb_each`), and the three tables' statements go in one
//! execute.
//!
//! Why: sqlx runs each SQLite statement on the connection's worker thread, and
//! every statement is a round trip to it (a thread wake-up each way, and the
//! tokio worker's own park and wake). At agent rates a batch is a few rows a
//! second, and the fixed-size multi-row inserts (`multi_insert`) took eight round
//! trips for a ten-row batch: half of the gateway's context switches at 10 req/s.
//! This way a small batch is one: `BEGIN`, the three inserts and `COMMIT` in one
//! execute (`Store::write_small_batch`).
//!
//! Only small batches: SQLite's `->>` costs more per row than binding values, so
//! at saturation, where batches are large and round trips few per row, the
//! multi-row path is cheaper (the same-run A/B measured +6 % CPU per request at
//! 2,000 req/s with every batch on this path).
//!
//! Each row is a JSON array in column order; a text column that holds a JSON
//! document (the route trace) goes as a JSON string, read back with `->>`.
//!
//! `jsonb_each`, not `json_each`: the text array is parsed once into SQLite's
//! binary JSON, and each row's `value` is a slice of it that `->>` indexes
//! directly. `json_each` hands each row back as JSON text, which every `->>`
//! parses again: a row of n columns was serialized and parsed n times. Measured
//! with callgrind at 50 req/s (batches of ~50 rows): SQLite's share fell from
//! 162k to 80k instructions per request (the whole gateway from 299k to 217k).

/// Rows of one table up to which a batch takes this path.
pub const SMALL_BATCH: usize = 64;

/// One table's insert from a JSON array of rows.
pub struct JsonInsert {
    table: &'static str,
    columns: &'static [&'static str],
    /// What follows the `SELECT` (a conflict clause, or nothing).
    tail: &'static str,
}

impl JsonInsert {
    /// The insert into `table` of `columns`, in the order each row's array holds
    /// them, followed by `tail`.
    pub const fn new(
        table: &'static str,
        columns: &'static [&'static str],
        tail: &'static str,
    ) -> JsonInsert {
        JsonInsert { table, columns, tail }
    }

    /// The statement, reading its rows from parameter `$param`.
    pub fn text(&self, param: usize) -> String {
        let values: Vec<String> = (0..self.columns.len()).map(|i| format!("value ->> {i}")).collect();
        // `WHERE true`: SQLite's grammar needs it between a `SELECT … FROM` and an
        // `ON CONFLICT` clause.
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM jsonb_each(${param}) WHERE true{}",
            self.table,
            self.columns.join(", "),
            values.join(", "),
            self.tail
        )
    }
}

/// `rows` as one JSON array (each row a tuple, serialized as an array).
pub fn json_rows<T: serde::Serialize>(rows: impl Iterator<Item = T>) -> Result<String, serde_json::Error> {
    serde_json::to_string(&rows.collect::<Vec<T>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_unpack_in_column_order() {
        let insert = JsonInsert::new("t", &["a", "b"], " ON CONFLICT (a) DO NOTHING");
        assert_eq!(
            insert.text(2),
            "INSERT INTO t (a, b) SELECT value ->> 0, value ->> 1 FROM jsonb_each($2) WHERE true ON CONFLICT (a) DO NOTHING"
        );
        let rows = json_rows([(1_i64, Some("x")), (2, None)].into_iter());
        assert_eq!(rows.ok().as_deref(), Some(r#"[[1,"x"],[2,null]]"#));
    }
}
