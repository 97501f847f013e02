//! Dispatch: turns `(tool name, JSON arguments)` into a JSON result or an [`Envelope`]. The
//! MCP handler and the CLI both call tools only through [`Service::call`], which finds the
//! tool by either spelling of its name, counts the retry budget (L3) and turns a panic into
//! the envelope. The state the tools act on is the core's [`Store`], which `Service` gives
//! by [`Service::store`].

use crate::tools;
pub use crate::tools::{ToolListing, ToolNames, ToolProfile};
use resilient_write_core::envelope::{Envelope, ErrorKind, Failure};
use resilient_write_core::retry::RetryBudgets;
use resilient_write_core::startup;
use resilient_write_core::store::{self, Store};
use resilient_write_core::tx::RecoveryReport;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

pub use resilient_write_core::store::{DEFAULT_MAX_WRITE_BYTES, STATE_DIR_NAME};

/// Configuration resolved from flags and environment by `cmd`: the store's and the listing's.
#[derive(Debug, Clone)]
pub struct Config {
    pub store: store::Config,
    pub tool_names: ToolNames,
    /// The tools listed and accepted (`serve --tools`, `--read-only`; default: the original's
    /// listed, the rest in toolsets, all accepted).
    pub tools: ToolListing,
}

impl Config {
    /// Defaults for a process started in `cwd`.
    pub fn new(cwd: PathBuf) -> Config {
        Config {
            store: store::Config::new(cwd),
            tool_names: ToolNames::default(),
            tools: ToolListing::default(),
        }
    }
}

/// A running service: the store, the retry budgets and how tools are listed.
pub struct Service {
    store: Arc<Store>,
    budgets: RetryBudgets,
    tool_names: ToolNames,
    tools: ToolListing,
    recovery: Option<RecoveryReport>,
}

impl Service {
    /// Open the store (with its start-up repairs) and serve it. Never fails: configuration
    /// problems are logged and reported by every tool call that they affect.
    pub fn start(config: Config) -> Arc<Service> {
        let (store, recovery) = startup::open(config.store);
        Arc::new(Service {
            budgets: RetryBudgets::new(store.retry_start()),
            store,
            tool_names: config.tool_names,
            tools: config.tools,
            recovery,
        })
    }

    /// Like [`Service::start`], but `Err` (one line per problem) when the state directory must
    /// not be used (`Store::state_refused`): what every front end that serves or reads state
    /// calls, so a symlink planted for `.resilient_write/` stops the process at start.
    pub fn start_checked(config: Config) -> Result<Arc<Service>, String> {
        let service = Service::start(config);
        match service.store().state_refused() {
            [] => Ok(service),
            problems => Err(format!(
                "refusing to use the state directory:\n  {}",
                problems.join("\n  ")
            )),
        }
    }

    /// The store the tools act on.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// What transaction recovery did when the store was opened (`None`: repair was off).
    pub fn recovery(&self) -> Option<&RecoveryReport> {
        self.recovery.as_ref()
    }

    /// How tools are listed.
    pub fn tool_names(&self) -> ToolNames {
        self.tool_names
    }

    /// The tools this service lists and accepts.
    pub fn tools(&self) -> &ToolListing {
        &self.tools
    }

    /// Run tool `name` (either spelling) with `args`. Failures become the envelope, with the
    /// retry budget counted here. A tool outside a fixed profile is refused, never run.
    pub fn call(&self, name: &str, args: Value) -> std::result::Result<Value, Envelope> {
        let Some(spec) = tools::find(name) else {
            return Err(Failure::UnknownTool { name: name.into() }.envelope(name, 0));
        };
        self.call_with(spec, args, |args| (spec.run)(&self.store, args))
    }

    /// Run `spec` as [`Service::call`] does (profile, retry budget, a panic caught), with
    /// `run` doing the work: for a tool whose state is a front end's rather than the store's
    /// (`toolsets` and an MCP session's tool list).
    pub fn call_with(
        &self,
        spec: &'static tools::ToolSpec,
        args: Value,
        run: impl FnOnce(Value) -> resilient_write_core::envelope::Result<Value>,
    ) -> std::result::Result<Value, Envelope> {
        let shown = tools::listed_name(spec.name, self.tool_names);
        if !self.tools.accepts(spec.name) {
            let enabled = self
                .tools
                .fixed_names()
                .iter()
                .map(|n| tools::listed_name(n, self.tool_names))
                .collect();
            let f = Failure::ToolNotEnabled {
                name: shown.clone(),
                enabled,
            };
            return Err(f.envelope(&shown, 0));
        }
        let key_of = |args: &Value| {
            let mut key = RetryBudgets::key(spec.name, args);
            // A client's roots are part of what a call means: once they change, a call refused
            // outside every root may succeed, so it counts against a budget of its own.
            if let Some(ws) =
                resilient_write_core::client_session::current().and_then(|s| s.workspaces.clone())
            {
                let roots: Vec<String> = ws.roots().map(|r| r.display().to_string()).collect();
                key = resilient_write_core::hash::sha256_hex(
                    format!("{key}\0{}", roots.join("\0")).as_bytes(),
                );
            }
            key
        };
        // The key hashes the canonical form of every argument (a whole file's content): only
        // computed before the call when a remembered failure has the call's sketch (its
        // arguments with long strings cut to their ends), else only if this call fails. So a
        // session with one failure does not pay a hash of every later call's content.
        let sketch = (!self.budgets.is_empty()).then(|| RetryBudgets::sketch(spec.name, &args));
        let (key, args_for_key) = if sketch.as_ref().is_some_and(|s| self.budgets.may_hold(s)) {
            (Some(key_of(&args)), None)
        } else {
            (None, Some(args.clone()))
        };
        if let Some(key) = &key
            && self.budgets.exhausted(key)
        {
            let f = Failure::RetryBudgetExhausted {
                last_error: ErrorKind::Blocked,
            };
            return Err(f.envelope(&shown, 0));
        }
        // What the log says of a call: never argument or file content (SPEC section 10).
        let started = std::time::Instant::now();
        if tracing::enabled!(tracing::Level::DEBUG) {
            let bytes = serde_json::to_vec(&args).unwrap_or_default();
            let hash = resilient_write_core::hash::sha256_hex(&bytes);
            tracing::debug!(
                tool = %shown,
                arg_bytes = bytes.len(),
                arg_sha256 = hash.get(..12).unwrap_or(""),
                "call"
            );
        }
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(args)))
            .unwrap_or_else(|panic| {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                Err(Failure::Internal(msg))
            });
        let ms = started.elapsed().as_secs_f64() * 1e3;
        match outcome {
            Ok(v) => {
                if let Some(key) = &key {
                    self.budgets.on_success(key);
                }
                tracing::debug!(tool = %shown, ms, "ok");
                Ok(v)
            }
            Err(f) => {
                let key = key
                    .or_else(|| args_for_key.as_ref().map(key_of))
                    .unwrap_or_default();
                let sketch = sketch
                    .or_else(|| {
                        args_for_key
                            .as_ref()
                            .map(|a| RetryBudgets::sketch(spec.name, a))
                    })
                    .unwrap_or_default();
                let left = self.budgets.on_failure(&key, &sketch, f.retriable());
                let env = f.envelope(&shown, left);
                tracing::debug!(
                    tool = %shown,
                    ms,
                    error = ?env.error,
                    reason_hint = ?env.reason_hint,
                    "failed"
                );
                Err(env)
            }
        }
    }
}
