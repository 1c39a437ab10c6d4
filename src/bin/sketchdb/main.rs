//! `sketchdb`: the admin shell. Subcommands and the interactive prompt share one command set;
//! everything goes through the library's public API.
//!
//! `sketchdb [--db FILE] <command> ...` (or `sketchdb FILE <command> ...`, the sqlite3 habit)
//! runs one command (the database defaults to `sketchdb.db`, or `$SKETCHDB_DB`);
//! `sketchdb FILE` with no command opens the interactive shell on FILE. Errors print one line
//! naming what and where (one JSON object with `--json`); the exit code says the error's
//! class ([`error::EXIT_CODES_HELP`]).
#![forbid(unsafe_code)]

mod bench;
mod cmd;
mod error;
mod export_header;
mod input;
mod load;
mod output;
mod panic;
mod session;
mod stdin;
mod write;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use cmd::{admin, bounds, dedup, delete, ingest, query, recipes, shell, transfer};
use error::{CliError, EXIT_CODES_HELP};
use output::outln;
use session::Session;

/// sketchdb: an embedded database of similarity sketches (MinHash, b-bit, OPH, SimHash).
#[derive(Parser, Debug)]
#[command(name = "sketchdb", version, about, subcommand_precedence_over_arg = true, after_help = EXIT_CODES_HELP)]
struct Cli {
    /// The database file: alone, opens the interactive shell on it; before a command, the
    /// same as --db (it must exist or end in .db or .sketchdb).
    database: Option<PathBuf>,
    /// The database file (default: sketchdb.db in the current directory).
    #[arg(long, global = true, env = "SKETCHDB_DB")]
    db: Option<PathBuf>,
    /// Print JSON lines instead of tables (summaries and errors on stderr as JSON too).
    #[arg(long, global = true)]
    json: bool,
    /// Show tables at full width and every member of long lists.
    #[arg(long, global = true)]
    wide: bool,
    /// Seconds to wait for a database another process holds before giving up with exit 3
    /// (0: give up at once).
    #[arg(long, global = true, env = "SKETCHDB_BUSY_TIMEOUT", value_name = "SECS", value_parser = session::parse_busy_timeout)]
    busy_timeout: Option<std::time::Duration>,
    /// The storage engine's page cache of this process, in bytes (K, M, G suffixes: 64M; 0 to
    /// 1T; default 64M).
    #[arg(long, global = true, env = "SKETCHDB_PAGE_CACHE", value_name = "SIZE", value_parser = session::parse_size)]
    page_cache: Option<usize>,
    /// The probe cache budget of this process: index values and candidates' records kept for
    /// repeated queries, in bytes (K, M, G suffixes; 0 keeps nothing; default 1G).
    #[arg(long, global = true, env = "SKETCHDB_PROBE_CACHE", value_name = "SIZE", value_parser = session::parse_size)]
    probe_cache: Option<usize>,
    /// The interactive shell: open the database read-write at once (by default it is read-only
    /// until the first command that writes).
    #[arg(long)]
    write: bool,
    /// Also print the detail of internal failures (a storage engine's panic message) on stderr.
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

/// One line of the interactive shell.
#[derive(Parser, Debug)]
#[command(name = "", no_binary_name = true, disable_version_flag = true)]
struct ShellLine {
    /// Print JSON lines instead of tables (summaries and errors on stderr as JSON too).
    #[arg(long, global = true)]
    json: bool,
    /// Show tables at full width and every member of long lists.
    #[arg(long, global = true)]
    wide: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a collection (sketch kind, parameters, tokenizer).
    Create(admin::CreateArgs),
    /// List collections.
    List,
    /// Drop a collection and its records.
    Drop {
        /// The collection.
        collection: String,
    },
    /// Ingest text files, JSONL records or u64 fingerprint files (resumable).
    Ingest(ingest::IngestArgs),
    /// Ingest records like `ingest`, replacing the records of keys already stored.
    Upsert(ingest::IngestArgs),
    /// Delete records by key (from the command line or a file of keys).
    Delete(delete::DeleteArgs),
    /// Build a collection's index anew from its rows (or drop it with --none).
    Reindex(admin::ReindexArgs),
    /// Find similar records: by threshold, top-k or Hamming radius.
    Query {
        /// The collection.
        collection: String,
        #[command(flatten)]
        probe: query::Probe,
        #[command(flatten)]
        ask: query::Ask,
    },
    /// Estimate the similarity of two stored keys (or of every pair in a file), with its
    /// interval.
    Estimate(query::EstimateArgs),
    /// Show the plan a query would use, the alternatives and their costs.
    // `explain` shows one query's plan: `--queries` is refused by name, so help hides it.
    #[command(mut_arg("queries", |a| a.hide(true)), mut_arg("threads", |a| a.hide(true)))]
    Explain {
        /// The collection.
        collection: String,
        #[command(flatten)]
        probe: query::Probe,
        #[command(flatten)]
        ask: query::Ask,
        /// Also run the query and report what it did.
        #[arg(long)]
        analyze: bool,
    },
    /// Group near-duplicates into clusters (a file or folder is ingested first) and write the
    /// deduplicated records, the drop list and the scored pairs.
    Dedup(dedup::DedupArgs),
    /// Collection and file statistics.
    Stats,
    /// Check every page, map and index (read-only: the file is left byte for byte as it was).
    Verify {
        /// Also run the storage engine's own integrity check, which needs the file to itself
        /// and may repair and rewrite it: opens read-write.
        #[arg(long)]
        engine: bool,
    },
    /// Rewrite pages without deleted rows and give file space back.
    Compact,
    /// Write a collection as JSON lines (round trip exact).
    Export {
        /// The collection.
        collection: String,
        /// Output file (`-` for stdout).
        #[arg(long, short, default_value = "-")]
        out: PathBuf,
    },
    /// Read a collection written by `export`.
    Import(transfer::ImportArgs),
    /// Measure the planner's cost constants on this machine and store them in the database.
    Calibrate,
    /// Expected LSH false positives/negatives and estimator error for a configuration.
    Bounds(bounds::BoundsArgs),
    /// The named text recipes (`create --recipe NAME`) and their steps.
    Recipes {
        /// Show only this recipe.
        name: Option<String>,
    },
    /// Run a shared benchmark workload; prints JSON result lines.
    Bench {
        #[command(subcommand)]
        workload: bench::Workload,
    },
}

fn dispatch(session: &mut Session, command: &Command, json_out: bool) -> Result<(), CliError> {
    match command {
        Command::Create(args) => admin::create(session, args),
        Command::List => admin::list(session, json_out),
        Command::Drop { collection } => admin::drop(session, collection),
        Command::Ingest(args) => ingest::ingest(session, args),
        Command::Upsert(args) => ingest::upsert(session, args),
        Command::Delete(args) => delete::delete(session, args),
        Command::Reindex(args) => admin::reindex(session, args),
        Command::Query { collection, probe, ask } => query::query(session, collection, probe, ask, json_out),
        Command::Estimate(args) => query::estimate(session, args, json_out),
        Command::Explain { collection, probe, ask, analyze } => {
            query::explain(session, collection, probe, ask, *analyze, json_out)
        }
        Command::Dedup(args) => {
            session.create_missing = true;
            dedup::dedup(session, args, json_out)
        }
        Command::Stats => admin::stats(session, json_out),
        Command::Verify { .. } => {
            if admin::verify(session, json_out)? {
                Ok(())
            } else {
                Err(CliError::Runtime(format!("verify found problems in {}", session.path().display())))
            }
        }
        Command::Compact => admin::compact(session),
        Command::Export { collection, out } => transfer::export(session, collection, out),
        Command::Import(args) => transfer::import(session, args),
        Command::Calibrate => admin::calibrate(session, json_out),
        Command::Bounds(args) => bounds::bounds(args, json_out),
        Command::Recipes { name } => recipes::recipes(name.as_deref(), json_out),
        Command::Bench { workload } => bench::run(workload),
    }
}

/// Whether `command` only reads the database, so that a one-shot run opens it read-only
/// (beside a writer process, on a read-only file, without changing a byte).
fn reads_only(command: &Command) -> bool {
    match command {
        Command::List
        | Command::Query { .. }
        | Command::Estimate(_)
        | Command::Explain { .. }
        | Command::Stats
        | Command::Verify { engine: false }
        | Command::Export { .. } => true,
        // A file or folder is ingested into a collection first.
        Command::Dedup(args) => !args.ingests(),
        _ => false,
    }
}

struct Shell {
    session: Session,
}

impl shell::ShellCommands for Shell {
    fn execute(&mut self, argv: Vec<String>) -> Result<(), CliError> {
        match ShellLine::try_parse_from(argv) {
            Ok(line) => {
                output::set_mode(line.json, line.wide);
                // The first command that writes reopens the file read-write; when another
                // process holds it, the shell goes on reading through a read-only handle.
                let upgrade = !reads_only(&line.command) && self.session.make_writable();
                let result = dispatch(&mut self.session, &line.command, line.json);
                if upgrade && !self.session.is_open() {
                    self.session.read_only = true;
                }
                result
            }
            Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) => outln!("{e}"),
            Err(e) => {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or("invalid command").trim_start_matches("error: ").to_string();
                Err(CliError::Usage(format!("{first} (try .help)")))
            }
        }
    }

    fn help(&self) -> String {
        let mut cmd = ShellLine::command();
        format!(
            "{}\n.help  this text\n.complete TEXT  list what tab completes TEXT with\n.quit  leave the shell",
            cmd.render_help()
        )
    }

    fn command_names(&self) -> Vec<String> {
        let mut names: Vec<String> = ShellLine::command().get_subcommands().map(|c| c.get_name().to_string()).collect();
        names.extend([".help".to_string(), ".complete".to_string(), ".quit".to_string()]);
        names
    }

    fn collection_names(&mut self) -> Vec<String> {
        self.session.collection_names()
    }
}

/// Whether `path`, given before a command, names a database: an existing file, or a name
/// ending in `.db` or `.sketchdb` (the sqlite3 habit `sketchdb x.db stats`).
fn names_database(path: &std::path::Path) -> bool {
    path.is_file() || matches!(path.extension().and_then(|e| e.to_str()), Some("db" | "sketchdb"))
}

fn run(cli: Cli) -> Result<bool, CliError> {
    output::set_mode(cli.json, cli.wide);
    match cli.command {
        Some(command) => {
            let path = match cli.database {
                Some(db) if names_database(&db) => Some(db),
                Some(other) => {
                    return Err(CliError::Usage(format!(
                        "`{}` before the command is neither an existing file nor a name ending in .db or .sketchdb \
                         (give the database with --db)",
                        other.display()
                    )));
                }
                None => cli.db,
            };
            let mut session = Session::new(path);
            session.busy_timeout = cli.busy_timeout;
            session.caches = (cli.page_cache, cli.probe_cache);
            session.read_only = reads_only(&command);
            dispatch(&mut session, &command, cli.json)?;
            Ok(true)
        }
        None => {
            let path = cli.database.or(cli.db).unwrap_or_else(|| PathBuf::from(session::DEFAULT_DB));
            let mut session = Session::new(Some(path));
            session.create_missing = true;
            session.busy_timeout = cli.busy_timeout;
            session.caches = (cli.page_cache, cli.probe_cache);
            session.read_only = !cli.write;
            shell::run(&mut Shell { session })
        }
    }
}

/// Whether `--json` is among the raw arguments (for errors found before parsing succeeds).
fn json_in_args() -> bool {
    std::env::args_os().skip(1).any(|a| a == "--json")
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && json_in_args() => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid command").trim_start_matches("error: ").to_string();
            output::report_error(&CliError::Usage(first), true);
            return ExitCode::from(error::EXIT_USAGE);
        }
        Err(e) => {
            // Help and version go to stdout (a closed pipe is ignored), usage errors to
            // stderr with exit code 2.
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(error::EXIT_USAGE) } else { ExitCode::SUCCESS };
        }
    };
    let json = cli.json;
    panic::install(cli.verbose);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(cli))).unwrap_or_else(|payload| {
        Err(CliError::Runtime(format!(
            "internal error: {} (this is a bug in sketchdb; please report it)",
            panic::describe(payload.as_ref())
        )))
    });
    match outcome.and_then(|ok| output::flush_out().map(|()| ok)) {
        Ok(true) | Err(CliError::Closed) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(error::EXIT_RUNTIME),
        Err(e) => {
            output::report_error(&e, json);
            ExitCode::from(e.kind().code())
        }
    }
}
