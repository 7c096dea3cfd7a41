//! The log writer's inserts: all of a batch's rows for one table travel as one
//! JSON array bound to one parameter, which the database unpacks itself
//! (`json_each` in SQLite, `jsonb_array_elements` in Postgres), so a batch of any
//! size is one statement per table with one bound value.
//!
//! Why: sqlx runs each SQLite statement on the connection's worker thread, and
//! every statement is a round trip to it (two thread wake-ups each way). Row-per-
//! statement inserts cost two hand-offs per row; fixed-size multi-row statements
//! still cost eight round trips for a ten-row batch, which at agent rates (a batch
//! a second of a few rows) was half the gateway's context switches. Now a batch is
//! three round trips whatever its size (`BEGIN`, the three inserts sent as one
//! multi-statement execute, `COMMIT`), with one statement text per table to
//! prepare and cache, and no per-value binding work on the way through sqlx's
//! `Any` driver.
//!
//! Each row is a JSON array in column order; a text column that holds a JSON
//! document (the route trace) goes as a JSON string, so both databases read every
//! element back with `->>`.

use std::sync::OnceLock;

use super::Backend;

/// What a column holds, for Postgres's casts (SQLite takes `->>`'s own types).
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// An integer (`BIGINT`/`INTEGER`).
    Int,
    /// Text.
    Text,
}

/// One table's insert from a JSON array of rows.
pub struct JsonInsert {
    table: &'static str,
    columns: &'static [(&'static str, Kind)],
    /// What follows the `SELECT` (a conflict clause, or nothing).
    tail: &'static str,
    sqlite: OnceLock<String>,
    postgres: OnceLock<String>,
}

impl JsonInsert {
    /// The insert into `table` of `columns`, in the order each row's array holds
    /// them, followed by `tail`.
    pub const fn new(
        table: &'static str,
        columns: &'static [(&'static str, Kind)],
        tail: &'static str,
    ) -> JsonInsert {
        JsonInsert { table, columns, tail, sqlite: OnceLock::new(), postgres: OnceLock::new() }
    }

    /// The statement, reading its rows from parameter `$param`.
    pub fn text(&self, backend: Backend, param: usize) -> String {
        let body = match backend {
            Backend::Sqlite => self.sqlite.get_or_init(|| self.build(backend)),
            Backend::Postgres => self.postgres.get_or_init(|| self.build(backend)),
        };
        body.replace("$PARAM", &format!("${param}"))
    }

    fn build(&self, backend: Backend) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(name, _)| *name).collect();
        let values: Vec<String> = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, kind))| match (backend, kind) {
                (Backend::Postgres, Kind::Int) => format!("(value ->> {i})::bigint"),
                _ => format!("value ->> {i}"),
            })
            .collect();
        let source = match backend {
            Backend::Sqlite => "json_each($PARAM)",
            Backend::Postgres => "jsonb_array_elements($PARAM::jsonb)",
        };
        // `WHERE true`: SQLite's grammar needs it between a `SELECT … FROM` and an
        // `ON CONFLICT` clause.
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM {source} WHERE true{}",
            self.table,
            names.join(", "),
            values.join(", "),
            self.tail
        )
    }
}

/// Rows serialized between two yields to the runtime: a full batch (1,024 rows of
/// each table) serialized in one go held a tokio worker for milliseconds, which
/// the requests queued behind it saw as a p99 of +1.5 ms at 2,000 req/s.
const ROWS_PER_YIELD: usize = 64;

/// A JSON array of rows (each row a tuple, serialized as an array), built a few
/// rows at a time.
pub struct JsonRows {
    text: String,
    rows: usize,
}

impl JsonRows {
    /// An empty array.
    pub fn new() -> JsonRows {
        JsonRows { text: String::from("["), rows: 0 }
    }

    /// Appends `row`, yielding to the runtime every [`ROWS_PER_YIELD`] rows.
    pub async fn push<T: serde::Serialize>(&mut self, row: T) -> Result<(), serde_json::Error> {
        if self.rows > 0 {
            if self.rows % ROWS_PER_YIELD == 0 {
                tokio::task::yield_now().await;
            }
            self.text.push(',');
        }
        self.text.push_str(&serde_json::to_string(&row)?);
        self.rows += 1;
        Ok(())
    }

    /// The array's text.
    pub fn finish(mut self) -> String {
        self.text.push(']');
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static INSERT: JsonInsert =
        JsonInsert::new("t", &[("a", Kind::Int), ("b", Kind::Text)], " ON CONFLICT (a) DO NOTHING");

    #[test]
    fn each_backend_unpacks_the_array_in_column_order() {
        assert_eq!(
            INSERT.text(Backend::Sqlite, 2),
            "INSERT INTO t (a, b) SELECT value ->> 0, value ->> 1 FROM json_each($2) WHERE true ON CONFLICT (a) DO NOTHING"
        );
        assert_eq!(
            INSERT.text(Backend::Postgres, 1),
            "INSERT INTO t (a, b) SELECT (value ->> 0)::bigint, value ->> 1 FROM jsonb_array_elements($1::jsonb) \
             WHERE true ON CONFLICT (a) DO NOTHING"
        );
    }

    #[tokio::test]
    async fn rows_become_one_array_of_arrays() {
        let mut rows = JsonRows::new();
        assert_eq!(JsonRows::new().finish(), "[]");
        for i in 0..130_i64 {
            rows.push((i, if i == 1 { Some("y\"z") } else { None })).await.unwrap_or_else(|e| panic!("{e}"));
        }
        let text = rows.finish();
        assert!(text.starts_with(r#"[[0,null],[1,"y\"z"],[2,null],"#), "{text}");
        let back: Vec<(i64, Option<String>)> = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.len(), 130);
        assert_eq!(back[129], (129, None));
    }
}
