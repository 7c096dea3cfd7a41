//! Multi-row `INSERT`s for the log writer. sqlx runs each SQLite statement on the
//! connection's worker thread, so a statement per row cost two thread hand-offs per
//! row (the profile at saturation: a tenth of the gateway's CPU in futex wake-ups
//! and the channel to that thread). One statement carries up to [`CHUNKS`]`[0]`
//! rows instead; chunk sizes are fixed powers of two so that only a handful of
//! statement texts exist, each prepared once and cached by sqlx.
//!
//! SQLite gets anonymous `?` placeholders, not `$N`: sqlx looks up every numbered
//! parameter's name through `sqlite3_bind_parameter_name`, itself a linear scan of
//! the statement's names, so binding a 960-parameter `$N` statement is quadratic
//! (15 % of the gateway's CPU at saturation in the profile). Anonymous parameters
//! have no name to look up.
//!
//! SQLite's statements are `INSERT OR FAIL`: a multi-row statement that may abort
//! halfway (the default conflict algorithm, `ABORT`, for a `NOT NULL` column) must
//! be able to undo its own rows without undoing the transaction, so inside one
//! SQLite keeps a statement journal: the pages it changes, copied before it changes
//! them. On a database with `auto_vacuum` (ours: it lets retention shrink the
//! file) every insert also changes pointer-map pages, and the journal outgrew its
//! 64 KB in memory into a temporary file under `/var/tmp`: in an strace of the
//! saturated writer, half of SQLite's page writes went there (counted over whole
//! runs, `pwrite`s per request fell from 1.04 to 0.96 without it; strace slows the
//! writer, and larger batches journal more). `FAIL` stops the statement without
//! undoing its earlier rows, so it needs no journal; the log writer rolls the
//! whole transaction back on any error anyway, so a batch still lands whole or not
//! at all.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use sqlx::query::Query;
use sqlx::{Any, Database, Encode, Sqlite, Type};

/// A log insert being bound: with SQLite's own driver on a SQLite file, with `Any`
/// on Postgres (see `log_store`).
pub type InsertQuery<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

/// The values a log row binds, by value: a `String` moves into the statement's
/// arguments instead of being copied, and a shared text (a connection's id, its
/// provider, a model, the request id) is bound as the `Arc` it already is.
///
/// Why shared texts matter: sqlx's SQLite driver wraps every `String` it binds
/// in a new `Arc`, and the log writer's rows are freed on SQLite's worker thread,
/// so each owned text cost an allocation on the request path, another on the
/// writer and two frees on a third thread (jemalloc hands those back to the
/// allocating thread's arena under its lock). A shared `Arc<str>` is bound as is
/// and dropped with a reference count (callgrind at 100 req/s: SQLite's thread
/// spent a tenth of its instructions freeing bound texts).
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

/// How a driver takes a shared text: SQLite's binds the `Arc` itself (sqlx's
/// `TextSlice`); `Any` (Postgres) has no encoding for `Arc<str>`, so it gets a copy.
pub trait SharedText: Database {
    /// What a shared text is bound as.
    type Shared: for<'t> Encode<'t, Self> + Type<Self> + Send + 'static;
    /// `text` as this driver binds it.
    fn shared(text: Arc<str>) -> Self::Shared;
    /// A string literal as this driver binds it.
    fn word(text: &'static str) -> Self::Shared;
}

impl SharedText for Sqlite {
    type Shared = Arc<str>;
    fn shared(text: Arc<str>) -> Arc<str> {
        text
    }
    fn word(text: &'static str) -> Arc<str> {
        shared_word(text)
    }
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

/// The shared copy of a fixed text, made once per thread: bound as a `&str`, sqlx's
/// SQLite driver copies it into a new `String` in a new `Arc` on every bind (a
/// request's rows bind three: its route twice, its outcome). The texts are string
/// literals, so there are as many entries as literal sites, a few dozen at most;
/// they are told apart by address.
fn shared_word(word: &'static str) -> Arc<str> {
    thread_local! {
        static WORDS: RefCell<Vec<(&'static str, Arc<str>)>> = const { RefCell::new(Vec::new()) };
    }
    WORDS.with_borrow_mut(|words| {
        if let Some((_, shared)) = words.iter().find(|(w, _)| std::ptr::eq(*w, word)) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(word);
        words.push((word, shared.clone()));
        shared
    })
}

/// Binds `rows` rows of `columns` NULLs: the rows a padded statement lacks.
pub fn bind_padding<Q: LogValues>(mut query: Q, rows: usize, columns: usize) -> Q {
    for _ in 0..rows * columns {
        query = query.opt_int(None);
    }
    query
}

/// Rows per statement, largest first; a batch is split greedily.
pub const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// Rows of the padded statement ([`MultiInsert::padded`]).
pub const PADDED_ROWS: usize = 16;

/// The statement texts of one table, one per chunk size.
pub struct MultiInsert {
    head: &'static str,
    columns: usize,
    tail: &'static str,
    numbered: OnceLock<Vec<String>>,
    sqlite: OnceLock<Vec<String>>,
    padded: OnceLock<String>,
}

impl MultiInsert {
    /// `head` is `INSERT INTO t (a, b, …) VALUES `, `columns` its column count and
    /// `tail` what follows the values (a conflict clause, or nothing). SQLite's
    /// texts become `INSERT OR FAIL INTO …` (see the module's notes).
    pub const fn new(head: &'static str, columns: usize, tail: &'static str) -> MultiInsert {
        MultiInsert {
            head,
            columns,
            tail,
            numbered: OnceLock::new(),
            sqlite: OnceLock::new(),
            padded: OnceLock::new(),
        }
    }

    /// Its column count.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The statement for any number of rows up to [`PADDED_ROWS`] (SQLite, `?`
    /// placeholders): it always takes [`PADDED_ROWS`] rows and drops those whose
    /// first column is NULL, so the rows a batch lacks are bound as NULLs. One text
    /// for every row count keeps a batch script's texts few (see
    /// `Store::write_small_batch`): sqlx prepares and caches each text it meets.
    pub fn padded(&self) -> &str {
        self.padded.get_or_init(|| {
            let head = self.sqlite_head();
            let insert = head.trim_end().strip_suffix("VALUES").unwrap_or(&head).trim_end();
            // `WHERE`: SQLite's grammar needs one between a `SELECT` and an
            // `ON CONFLICT` clause anyway.
            format!(
                "{insert} SELECT * FROM (VALUES {}) WHERE column1 IS NOT NULL{}",
                self.values(PADDED_ROWS, true),
                self.tail
            )
        })
    }

    /// The statement for `rows` rows (one of [`CHUNKS`]): Postgres's, with `$N`
    /// placeholders, or, `sqlite`, SQLite's (`?` placeholders, `OR FAIL`).
    pub fn text(&self, rows: usize, sqlite: bool) -> &str {
        let texts = if sqlite { &self.sqlite } else { &self.numbered };
        let texts = texts.get_or_init(|| CHUNKS.iter().map(|&n| self.build(n, sqlite)).collect());
        let index = CHUNKS.iter().position(|&n| n == rows).unwrap_or(CHUNKS.len() - 1);
        &texts[index]
    }

    fn build(&self, rows: usize, sqlite: bool) -> String {
        let head = if sqlite { self.sqlite_head() } else { self.head.to_owned() };
        format!("{head}{}{}", self.values(rows, sqlite), self.tail)
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
pub fn chunk_sizes(mut rows: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let size = CHUNKS.iter().copied().find(|&n| n <= rows)?;
        rows -= size;
        Some(size)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_text_is_shared_not_copied_per_bind() {
        const ROUTE: &str = "/v1/messages";
        let first = shared_word(ROUTE);
        let again = shared_word(ROUTE);
        assert_eq!(&*first, ROUTE);
        assert!(Arc::ptr_eq(&first, &again), "the second bind of a literal reuses the first one's copy");
        let other = shared_word("served");
        assert_eq!(&*other, "served");
        assert!(!Arc::ptr_eq(&first, &other));
    }

    #[test]
    fn statements_number_their_placeholders_row_by_row() {
        let insert = MultiInsert::new("INSERT INTO t (a, b) VALUES ", 2, " ON CONFLICT DO NOTHING");
        assert_eq!(insert.text(1, false), "INSERT INTO t (a, b) VALUES ($1,$2) ON CONFLICT DO NOTHING");
        assert_eq!(
            insert.text(2, false),
            "INSERT INTO t (a, b) VALUES ($1,$2), ($3,$4) ON CONFLICT DO NOTHING"
        );
        assert!(insert.text(64, false).ends_with("($127,$128) ON CONFLICT DO NOTHING"));
        assert_eq!(
            insert.text(2, true),
            "INSERT OR FAIL INTO t (a, b) VALUES (?,?), (?,?) ON CONFLICT DO NOTHING"
        );
    }

    #[test]
    fn the_padded_statement_drops_rows_without_a_first_column() {
        let insert = MultiInsert::new("INSERT INTO t (a, b) VALUES ", 2, " ON CONFLICT DO NOTHING");
        let text = insert.padded();
        assert!(
            text.starts_with("INSERT OR FAIL INTO t (a, b) SELECT * FROM (VALUES (?,?), (?,?), "),
            "{text}"
        );
        assert!(text.ends_with("(?,?)) WHERE column1 IS NOT NULL ON CONFLICT DO NOTHING"), "{text}");
        assert_eq!(text.matches("(?,?)").count(), PADDED_ROWS);
    }

    #[test]
    fn a_batch_splits_into_few_chunks_covering_every_row() {
        let sizes: Vec<usize> = chunk_sizes(203).collect();
        assert_eq!(sizes, [64, 64, 64, 8, 2, 1]);
        assert_eq!(sizes.iter().sum::<usize>(), 203);
        assert_eq!(chunk_sizes(64).collect::<Vec<_>>(), [64]);
        assert_eq!(chunk_sizes(0).count(), 0);
    }
}
