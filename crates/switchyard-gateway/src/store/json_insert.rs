//! An insert whose rows travel as one JSON array bound to one parameter, unpacked
//! by SQLite itself (`jsonb_each`): the SQLite log writer's per-minute counts
//! (`log_store::write_sqlite`), a row or two of small integers per batch, where
//! one parameter keeps one prepared statement whatever the row count.
//!
//! Not for wide rows: extracting a column with `->>` costs more than binding it
//! (callgrind, the log's attempt and request rows: three times SQLite's
//! instructions per row of bound values), which is why those rows are bound.
//!
//! `jsonb_each`, not `json_each`: the text array is parsed once into SQLite's
//! binary JSON, and each row's `value` is a slice of it that `->>` indexes
//! directly. `json_each` hands each row back as JSON text, which every `->>`
//! parses again: a row of n columns is serialized and parsed n times.

/// One table's insert from a JSON array of rows.
pub struct JsonInsert {
    table: &'static str,
    columns: &'static [&'static str],
    /// What follows the `SELECT` (a conflict clause, or nothing).
    tail: &'static str,
    /// The statement, built on first use (the writer prepares it by this text at
    /// every flush, so it is not rebuilt each time).
    text: std::sync::OnceLock<String>,
}

impl JsonInsert {
    /// The insert into `table` of `columns`, in the order each row's array holds
    /// them, followed by `tail`.
    pub const fn new(
        table: &'static str,
        columns: &'static [&'static str],
        tail: &'static str,
    ) -> JsonInsert {
        JsonInsert { table, columns, tail, text: std::sync::OnceLock::new() }
    }

    /// The statement, reading its rows from its one `?` parameter.
    pub fn text(&self) -> &str {
        self.text.get_or_init(|| {
            let values: Vec<String> = (0..self.columns.len()).map(|i| format!("value ->> {i}")).collect();
            // `WHERE true`: SQLite's grammar needs it between a `SELECT … FROM` and an
            // `ON CONFLICT` clause.
            format!(
                "INSERT INTO {} ({}) SELECT {} FROM jsonb_each(?) WHERE true{}",
                self.table,
                self.columns.join(", "),
                values.join(", "),
                self.tail
            )
        })
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
            insert.text(),
            "INSERT INTO t (a, b) SELECT value ->> 0, value ->> 1 FROM jsonb_each(?) WHERE true ON CONFLICT (a) DO NOTHING"
        );
        let rows = json_rows([(1_i64, Some("x")), (2, None)].into_iter());
        assert_eq!(rows.ok().as_deref(), Some(r#"[[1,"x"],[2,null]]"#));
    }
}
