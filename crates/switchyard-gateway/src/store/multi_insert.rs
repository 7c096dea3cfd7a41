//! The log writer's `INSERT` texts and the trait its row binders are written
//! against.
//!
//! On Postgres (team mode) the writer goes through sqlx, one round trip per
//! statement, so one statement carries up to [`CHUNKS`]`[0]` rows; chunk sizes are
//! fixed powers of two so that only a handful of statement texts exist, each
//! prepared once and cached by sqlx. On SQLite the writer steps prepared
//! statements on its connection's own thread (`log_thread`), in chunks of
//! [`SQLITE_CHUNKS`] rows: no round trip to save there, but each statement
//! execution has a fixed cost (opening the table's and indexes' cursors and
//! finding the end of the table, halting and resetting the program) that one
//! statement of 16 rows pays once instead of 16 times.
//!
//! SQLite's texts have `?` placeholders and are `INSERT OR FAIL`. When the
//! SQLite writer first used multi-row statements, the default conflict algorithm
//! (`ABORT`, for a `NOT NULL` column) made SQLite keep a statement journal so a
//! statement could undo its own rows, and with `auto_vacuum` (ours: it lets
//! retention shrink the file) that journal spilled into a temporary file (half of
//! the saturated writer's page writes). `FAIL` undoes nothing, so it needs no
//! journal; the writer rolls the whole transaction back on any error anyway, so a
//! batch lands whole or not at all.

use std::sync::{Arc, OnceLock};

use sqlx::query::Query;
use sqlx::{Any, Database, Encode, Type};

/// A log insert being bound through sqlx (`Any`, on Postgres; see `log_store`).
pub type InsertQuery<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

/// The values a log row binds, by value: a `String` moves into the statement's
/// arguments instead of being copied, and a shared text (a connection's id, its
/// provider, a model, the request id) is bound as the `Arc` it already is.
///
/// Why shared texts matter: the rows are freed on the writer's thread, so each
/// owned text copied on the request path cost an allocation there and a free
/// on another thread (jemalloc hands those back to the allocating thread's arena
/// under its lock). A shared `Arc<str>` is dropped with a reference count, and
/// SQLite's binder reads it in place (callgrind at 100 req/s, with sqlx's driver:
/// SQLite's thread spent a tenth of its instructions freeing bound texts).
pub trait LogValues: Sized {
    /// An integer.
    fn int(self, value: i64) -> Self;
    /// An integer or NULL.
    fn opt_int(self, value: Option<i64>) -> Self;
    /// A text.
    fn text(self, value: String) -> Self;
    /// A text or NULL.
    fn opt_text(self, value: Option<String>) -> Self;
    /// A shared text.
    fn shared(self, value: Arc<str>) -> Self;
    /// A shared text or NULL.
    fn opt_shared(self, value: Option<Arc<str>>) -> Self;
    /// A fixed text (a route, an outcome's name).
    fn word(self, value: &'static str) -> Self;
}

/// How a sqlx driver takes a shared text: `Any` (Postgres) has no encoding for
/// `Arc<str>`, so it gets a copy.
pub trait SharedText: Database {
    /// What a shared text is bound as.
    type Shared: for<'t> Encode<'t, Self> + Type<Self> + Send + 'static;
    /// `text` as this driver binds it.
    fn shared(text: Arc<str>) -> Self::Shared;
    /// A string literal as this driver binds it.
    fn word(text: &'static str) -> Self::Shared;
}

impl SharedText for Any {
    type Shared = String;
    fn shared(text: Arc<str>) -> String {
        text.to_string()
    }
    fn word(text: &'static str) -> String {
        text.to_owned()
    }
}

impl<DB: SharedText> LogValues for InsertQuery<'_, DB>
where
    for<'t> i64: Encode<'t, DB> + Type<DB>,
    for<'t> Option<i64>: Encode<'t, DB> + Type<DB>,
    for<'t> String: Encode<'t, DB> + Type<DB>,
    for<'t> Option<String>: Encode<'t, DB> + Type<DB>,
    for<'t> Option<DB::Shared>: Encode<'t, DB> + Type<DB>,
{
    fn int(self, value: i64) -> Self {
        self.bind(value)
    }
    fn opt_int(self, value: Option<i64>) -> Self {
        self.bind(value)
    }
    fn text(self, value: String) -> Self {
        self.bind(value)
    }
    fn opt_text(self, value: Option<String>) -> Self {
        self.bind(value)
    }
    fn shared(self, value: Arc<str>) -> Self {
        self.bind(DB::shared(value))
    }
    fn opt_shared(self, value: Option<Arc<str>>) -> Self {
        self.bind(value.map(DB::shared))
    }
    fn word(self, value: &'static str) -> Self {
        self.bind(DB::word(value))
    }
}

/// Rows per statement, largest first; a batch is split greedily.
pub const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// Rows per statement on SQLite, largest first. Fewer sizes than Postgres: the
/// connection keeps every size's statement prepared (a compiled program each, a
/// few KB per row it inserts), and beyond 16 rows the fixed cost per row is
/// already small.
pub const SQLITE_CHUNKS: [usize; 3] = [16, 4, 1];

/// The statement texts of one table, one per chunk size.
pub struct MultiInsert {
    head: &'static str,
    columns: usize,
    tail: &'static str,
    numbered: OnceLock<Vec<String>>,
    sqlite: OnceLock<Vec<String>>,
}

impl MultiInsert {
    /// `head` is `INSERT INTO t (a, b, …) VALUES `, `columns` its column count and
    /// `tail` what follows the values (a conflict clause, or nothing). SQLite's
    /// texts become `INSERT OR FAIL INTO …` (see the module's notes).
    pub const fn new(head: &'static str, columns: usize, tail: &'static str) -> MultiInsert {
        MultiInsert { head, columns, tail, numbered: OnceLock::new(), sqlite: OnceLock::new() }
    }

    /// Postgres's statement for `rows` rows (one of [`CHUNKS`]), with `$N`
    /// placeholders.
    pub fn text(&self, rows: usize) -> &str {
        self.pick(&self.numbered, &CHUNKS, rows, || self.head.to_owned(), false)
    }

    /// SQLite's statement for `rows` rows (one of [`SQLITE_CHUNKS`]): `?`
    /// placeholders, `INSERT OR FAIL`.
    pub fn sqlite_text(&self, rows: usize) -> &str {
        self.pick(&self.sqlite, &SQLITE_CHUNKS, rows, || self.sqlite_head(), true)
    }

    /// The text for `rows` rows among one dialect's `texts`, made on first use for
    /// every size in `sizes` from that dialect's head and placeholders (`?` when
    /// `anonymous`, else `$N`).
    fn pick<'a>(
        &self,
        texts: &'a OnceLock<Vec<String>>,
        sizes: &[usize],
        rows: usize,
        head: impl FnOnce() -> String,
        anonymous: bool,
    ) -> &'a str {
        let texts = texts.get_or_init(|| {
            let head = head();
            sizes.iter().map(|&n| format!("{head}{}{}", self.values(n, anonymous), self.tail)).collect()
        });
        let index = sizes.iter().position(|&n| n == rows).unwrap_or(sizes.len() - 1);
        &texts[index]
    }

    /// The head with SQLite's `OR FAIL` after the `INSERT`.
    fn sqlite_head(&self) -> String {
        match self.head.strip_prefix("INSERT ") {
            Some(rest) => format!("INSERT OR FAIL {rest}"),
            None => self.head.to_owned(),
        }
    }

    /// `(?,…), (?,…)`: `rows` rows of placeholders, `$N` numbered row by row or,
    /// `anonymous`, `?`.
    fn values(&self, rows: usize, anonymous: bool) -> String {
        let mut sql = String::new();
        let mut n = 0;
        for row in 0..rows {
            sql.push_str(if row == 0 { "(" } else { ", (" });
            for column in 0..self.columns {
                n += 1;
                if column > 0 {
                    sql.push(',');
                }
                if anonymous {
                    sql.push('?');
                } else {
                    sql.push('$');
                    sql.push_str(&n.to_string());
                }
            }
            sql.push(')');
        }
        sql
    }
}

/// The sizes of [`CHUNKS`] a batch of `rows` rows splits into, largest first.
pub fn chunk_sizes(rows: usize) -> impl Iterator<Item = usize> {
    split(rows, &CHUNKS)
}

/// The sizes of [`SQLITE_CHUNKS`] a batch of `rows` rows splits into, largest first.
pub fn sqlite_chunk_sizes(rows: usize) -> impl Iterator<Item = usize> {
    split(rows, &SQLITE_CHUNKS)
}

/// `rows` split greedily into `sizes` (largest first, ending with 1).
fn split(mut rows: usize, sizes: &'static [usize]) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let size = sizes.iter().copied().find(|&n| n <= rows)?;
        rows -= size;
        Some(size)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_number_their_placeholders_row_by_row() {
        let insert = MultiInsert::new("INSERT INTO t (a, b) VALUES ", 2, " ON CONFLICT DO NOTHING");
        assert_eq!(insert.text(1), "INSERT INTO t (a, b) VALUES ($1,$2) ON CONFLICT DO NOTHING");
        assert_eq!(insert.text(2), "INSERT INTO t (a, b) VALUES ($1,$2), ($3,$4) ON CONFLICT DO NOTHING");
        assert!(insert.text(64).ends_with("($127,$128) ON CONFLICT DO NOTHING"));
        assert_eq!(insert.sqlite_text(1), "INSERT OR FAIL INTO t (a, b) VALUES (?,?) ON CONFLICT DO NOTHING");
        assert_eq!(
            insert.sqlite_text(4),
            "INSERT OR FAIL INTO t (a, b) VALUES (?,?), (?,?), (?,?), (?,?) ON CONFLICT DO NOTHING"
        );
        assert!(insert.sqlite_text(16).ends_with("(?,?), (?,?) ON CONFLICT DO NOTHING"));
        assert_eq!(insert.sqlite_text(16).matches('?').count(), 32);
    }

    #[test]
    fn a_batch_splits_into_few_chunks_covering_every_row() {
        let sizes: Vec<usize> = chunk_sizes(203).collect();
        assert_eq!(sizes, [64, 64, 64, 8, 2, 1]);
        assert_eq!(sizes.iter().sum::<usize>(), 203);
        assert_eq!(chunk_sizes(64).collect::<Vec<_>>(), [64]);
        assert_eq!(chunk_sizes(0).count(), 0);
        assert_eq!(sqlite_chunk_sizes(75).collect::<Vec<_>>(), [16, 16, 16, 16, 4, 4, 1, 1, 1]);
        assert_eq!(sqlite_chunk_sizes(3).collect::<Vec<_>>(), [1, 1, 1]);
    }
}
