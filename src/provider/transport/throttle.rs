//! How many calls go to one server's model at once (SPEC §14): `-j N` (or
//! `serve --max-concurrent`) is a ceiling and the start, and each lane —
//! one per model of a transport, so per (endpoint, model) — learns what
//! the server allows. 429s within `max(Retry-After, 1 s)` of an episode's
//! first are one episode, and each episode cuts the live limit ×0.8 (at
//! least by one, never below 1); each 10 s without a 429 grows it by one
//! back toward the ceiling; 5xx and timeouts pause that growth, never cut.
//! A call holds its slot while it is sent and streamed, and gives it back
//! while it waits to retry, so a cut limit takes effect at once. Every
//! change is kept (`LimitChange`) for the eval run's record.
//!
//! The clock is tokio's, so tests drive the rules with paused time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A quiet stretch this long grows the limit by one.
pub const GROWTH_STEP: Duration = Duration::from_secs(10);

/// The shortest rate-limit episode: 429s this close to its first are one.
pub const MIN_EPISODE: Duration = Duration::from_secs(1);

/// The most changes one lane keeps (an eval of a week against a flapping
/// server must not grow its record without end); the count of 429s and the
/// total wait stay exact.
const MAX_HISTORY: usize = 1_000;

/// Why the live limit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitReason {
    /// A rate-limit episode began: the limit was cut.
    RateLimit,
    /// A quiet stretch: the limit grew back by one.
    Recovered,
    /// A quota was found spent: no new calls should start.
    Quota,
}

/// One change of a lane's live limit, `at_ms` after the lanes were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitChange {
    pub at_ms: u64,
    pub limit: usize,
    pub reason: LimitReason,
}

/// What one lane went through, for the eval run's record and summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimits {
    /// The model the lane sends to.
    pub model: String,
    /// The ceiling the lane started at.
    pub ceiling: usize,
    /// 429s answered.
    pub rate_limited: u64,
    /// Episodes: bursts of 429s counted once.
    pub episodes: u64,
    /// Time calls spent waiting to retry a 429, summed over calls.
    pub waited_ms: u64,
    /// Time calls spent waiting for a slot, summed over calls.
    pub queued_ms: u64,
    /// Each change of the live limit, oldest first.
    pub history: Vec<LimitChange>,
}

/// `gemini-3.1-flash-lite: 14 × 429 in 2 episodes, 8.2 s waited, 1.0 s
/// queued`: what every view of a run's rate limits begins with, before its
/// own trail of the limit's changes.
impl std::fmt::Display for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} × 429 in {} episodes, {:.1} s waited, {:.1} s queued",
            self.model,
            self.rate_limited,
            self.episodes,
            self.waited_ms as f64 / 1000.0,
            self.queued_ms as f64 / 1000.0
        )
    }
}

/// Told of each rate-limit episode's start, once per episode: the line to
/// say (`gemini-3.1-flash-lite: rate-limited (429); 32 → 25 calls at once`).
pub type Announcer = Arc<dyn Fn(String) + Send + Sync>;

/// The lanes of one transport, one per model, made on first use.
pub struct Throttle {
    ceiling: usize,
    born: Instant,
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
    shared: Arc<Shared>,
}

/// What a throttle's lanes share: the first spent quota's message, and who
/// is told of episodes (set once by the command that shows them).
#[derive(Default)]
struct Shared {
    spent: Mutex<Option<String>>,
    announcer: std::sync::OnceLock<Announcer>,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("ceiling", &self.ceiling)
            .field("lanes", &lock(&self.lanes).len())
            .finish()
    }
}

impl Throttle {
    /// Lanes that start at and never pass `ceiling` calls at once.
    pub fn new(ceiling: usize) -> Throttle {
        Throttle {
            ceiling: ceiling.max(1),
            born: Instant::now(),
            lanes: Mutex::new(HashMap::new()),
            shared: Arc::new(Shared::default()),
        }
    }

    /// Says each episode's start to `announcer` (the first one set stays).
    pub fn announce_to(&self, announcer: Announcer) {
        let _ = self.shared.announcer.set(announcer);
    }

    /// The first spent quota a lane met, as its error said it.
    pub fn spent(&self) -> Option<String> {
        lock(&self.shared.spent).clone()
    }

    /// The most throttled lane's live limit, when one is below the ceiling.
    pub fn lowest(&self) -> Option<Live> {
        lock(&self.lanes)
            .values()
            .map(|lane| lane.live())
            .filter(|live| live.limit < live.ceiling)
            .min_by_key(|live| live.limit)
    }

    /// The lane of `model`.
    pub fn lane(&self, model: &str) -> Arc<Lane> {
        let mut lanes = lock(&self.lanes);
        if let Some(lane) = lanes.get(model) {
            return Arc::clone(lane);
        }
        let lane = Arc::new(Lane::new(
            model,
            self.ceiling,
            self.born,
            Arc::clone(&self.shared),
        ));
        lanes.insert(model.to_string(), Arc::clone(&lane));
        lane
    }

    /// What each lane that saw a 429 or a quota went through, by model.
    pub fn reports(&self) -> Vec<RateLimits> {
        let mut reports: Vec<RateLimits> = lock(&self.lanes)
            .values()
            .map(|lane| lane.report())
            .filter(|report| report.rate_limited > 0 || !report.history.is_empty())
            .collect();
        reports.sort_by(|a, b| a.model.cmp(&b.model));
        reports
    }
}

/// One (endpoint, model)'s live limit and its slots.
pub struct Lane {
    model: String,
    ceiling: usize,
    born: Instant,
    state: Mutex<LaneState>,
    freed: tokio::sync::Notify,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("model", &self.model)
            .field("live", &self.live())
            .finish()
    }
}

#[derive(Debug)]
struct LaneState {
    limit: usize,
    in_flight: usize,
    /// When the current rate-limit episode ends: a 429 before it is part
    /// of it.
    episode_until: Option<Instant>,
    /// Growth counts quiet time from here (a 429, a 5xx, a cooldown's end).
    quiet_since: Instant,
    report: RateLimits,
}

/// What the live limit is now, for a progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Live {
    pub limit: usize,
    pub ceiling: usize,
    pub in_flight: usize,
}

/// A call's place in its lane, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    lane: Arc<Lane>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut state = lock(&self.lane.state);
            state.in_flight = state.in_flight.saturating_sub(1);
        }
        self.lane.freed.notify_one();
    }
}

impl Lane {
    fn new(model: &str, ceiling: usize, born: Instant, shared: Arc<Shared>) -> Lane {
        Lane {
            shared,
            model: model.to_string(),
            ceiling,
            born,
            state: Mutex::new(LaneState {
                limit: ceiling,
                in_flight: 0,
                episode_until: None,
                quiet_since: Instant::now(),
                report: RateLimits {
                    model: model.to_string(),
                    ceiling,
                    ..RateLimits::default()
                },
            }),
            freed: tokio::sync::Notify::new(),
        }
    }

    /// Waits for a slot under the live limit; `None` when `cancel` fires
    /// first. The wait is counted as queued time.
    pub async fn acquire(self: &Arc<Self>, cancel: &CancellationToken) -> Option<Slot> {
        let asked = Instant::now();
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let next_growth = {
                let mut state = lock(&self.state);
                let now = Instant::now();
                self.grow(&mut state, now);
                if state.in_flight < state.limit {
                    state.in_flight += 1;
                    let queued = now.saturating_duration_since(asked);
                    state.report.queued_ms = state.report.queued_ms.saturating_add(millis(queued));
                    return Some(Slot {
                        lane: Arc::clone(self),
                    });
                }
                state.quiet_since.max(now) + GROWTH_STEP
            };
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return None,
                _ = &mut freed => {}
                _ = tokio::time::sleep_until(next_growth) => {}
            }
        }
    }

    /// A 429 asking for `asked` (or nothing). Returns the new limit when
    /// it began an episode (the caller says so once per episode).
    pub fn rate_limited(&self, asked: Option<Duration>) -> Option<usize> {
        let mut state = lock(&self.state);
        let now = Instant::now();
        state.report.rate_limited += 1;
        // A server's wait may be absurd (`1e20` seconds): a day at most here.
        let asked = asked
            .unwrap_or(Duration::ZERO)
            .min(Duration::from_secs(86_400));
        // Growth waits out the server's cooldown, then a quiet stretch.
        state.quiet_since = state.quiet_since.max(now + asked);
        let cooldown = asked.max(MIN_EPISODE);
        if state.episode_until.is_some_and(|until| now < until) {
            return None;
        }
        state.episode_until = Some(now + cooldown);
        state.report.episodes += 1;
        let was = state.limit;
        let cut = (was * 4 / 5).clamp(1, was.saturating_sub(1).max(1));
        state.limit = cut;
        self.record(&mut state, now, LimitReason::RateLimit);
        drop(state);
        if let Some(announce) = self.shared.announcer.get() {
            announce(format!(
                "{}: rate-limited (429); {was} → {cut} calls at once (of {})",
                self.model, self.ceiling
            ));
        }
        Some(cut)
    }

    /// A 5xx or a timeout: growth pauses (counts quiet time from now).
    pub fn faltered(&self) {
        let mut state = lock(&self.state);
        let now = Instant::now();
        state.quiet_since = state.quiet_since.max(now);
    }

    /// A spent quota (`message`: its error), recorded once; the throttle
    /// keeps the first for whoever stops starting calls.
    pub fn quota(&self, message: &str) {
        lock(&self.shared.spent).get_or_insert_with(|| message.to_string());
        let mut state = lock(&self.state);
        let now = Instant::now();
        let said = state
            .report
            .history
            .last()
            .is_some_and(|last| last.reason == LimitReason::Quota);
        if !said {
            self.record(&mut state, now, LimitReason::Quota);
        }
    }

    /// A wait before a 429's retry, added to the lane's total.
    pub fn waited(&self, wait: Duration) {
        let mut state = lock(&self.state);
        state.report.waited_ms = state.report.waited_ms.saturating_add(millis(wait));
    }

    pub fn live(&self) -> Live {
        let mut state = lock(&self.state);
        self.grow(&mut state, Instant::now());
        Live {
            limit: state.limit,
            ceiling: self.ceiling,
            in_flight: state.in_flight,
        }
    }

    pub fn report(&self) -> RateLimits {
        lock(&self.state).report.clone()
    }

    /// One step up per full quiet stretch since `quiet_since`.
    fn grow(&self, state: &mut LaneState, now: Instant) {
        while state.limit < self.ceiling
            && now.saturating_duration_since(state.quiet_since) >= GROWTH_STEP
        {
            state.quiet_since += GROWTH_STEP;
            state.limit += 1;
            let at = state.quiet_since;
            self.record(state, at, LimitReason::Recovered);
            self.freed.notify_one();
        }
    }

    fn record(&self, state: &mut LaneState, at: Instant, reason: LimitReason) {
        if state.report.history.len() < MAX_HISTORY {
            let change = LimitChange {
                at_ms: millis(at.saturating_duration_since(self.born)),
                limit: state.limit,
                reason,
            };
            state.report.history.push(change);
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A poisoned lock still holds consistent counts (every update is one
/// statement): carry on with them.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(lane: &Lane) -> Vec<(usize, LimitReason)> {
        lane.report()
            .history
            .iter()
            .map(|change| (change.limit, change.reason))
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_429s_cuts_once_and_the_next_episode_cuts_again() {
        let lane = Throttle::new(32).lane("m");
        assert_eq!(lane.rate_limited(Some(Duration::from_secs(1))), Some(25));
        for _ in 0..40 {
            assert_eq!(lane.rate_limited(Some(Duration::from_secs(1))), None);
        }
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(lane.rate_limited(None), None, "still the first episode");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(lane.rate_limited(None), Some(20), "25 × 0.8");
        let report = lane.report();
        assert_eq!((report.rate_limited, report.episodes), (43, 2));
        assert_eq!(
            limits(&lane),
            [(25, LimitReason::RateLimit), (20, LimitReason::RateLimit)]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn each_episode_is_announced_once() {
        let throttle = Throttle::new(10);
        let said = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&said);
        throttle.announce_to(Arc::new(move |line| into.lock().unwrap().push(line)));
        let lane = throttle.lane("m");
        for _ in 0..5 {
            lane.rate_limited(None);
        }
        tokio::time::advance(MIN_EPISODE).await;
        lane.rate_limited(None);
        assert_eq!(
            *said.lock().unwrap(),
            [
                "m: rate-limited (429); 10 → 8 calls at once (of 10)",
                "m: rate-limited (429); 8 → 6 calls at once (of 10)"
            ]
        );
        assert_eq!(throttle.lowest().map(|live| live.limit), Some(6));
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_retry_after_makes_one_long_episode() {
        let lane = Throttle::new(10).lane("m");
        assert_eq!(lane.rate_limited(Some(Duration::from_secs(30))), Some(8));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(lane.rate_limited(None), None);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(lane.rate_limited(None), Some(6), "8 × 0.8, rounded down");
    }

    #[tokio::test(start_paused = true)]
    async fn small_limits_still_fall_by_one_and_never_below_one() {
        let lane = Throttle::new(3).lane("m");
        let mut cuts = Vec::new();
        for _ in 0..4 {
            cuts.push(lane.rate_limited(None));
            tokio::time::advance(MIN_EPISODE).await;
        }
        assert_eq!(cuts, [Some(2), Some(1), Some(1), Some(1)]);
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_time_grows_the_limit_by_one_per_ten_seconds_up_to_the_ceiling() {
        let lane = Throttle::new(4).lane("m");
        lane.rate_limited(None);
        lane.rate_limited(None);
        assert_eq!(lane.live().limit, 3);
        tokio::time::advance(Duration::from_millis(9_999)).await;
        assert_eq!(lane.live().limit, 3, "not before 10 s");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(lane.live().limit, 4);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(lane.live().limit, 4, "never past the ceiling");
        assert_eq!(
            limits(&lane),
            [(3, LimitReason::RateLimit), (4, LimitReason::Recovered)]
        );
        assert_eq!(lane.report().history[1].at_ms, 10_000);
    }

    #[tokio::test(start_paused = true)]
    async fn server_errors_pause_growth_but_never_cut() {
        let lane = Throttle::new(8).lane("m");
        lane.rate_limited(None);
        assert_eq!(lane.live().limit, 6);
        tokio::time::advance(Duration::from_secs(9)).await;
        lane.faltered();
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(lane.live().limit, 6, "the 5xx restarted the quiet stretch");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(lane.live().limit, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn the_servers_cooldown_delays_growth() {
        let lane = Throttle::new(8).lane("m");
        lane.rate_limited(Some(Duration::from_secs(30)));
        tokio::time::advance(Duration::from_secs(39)).await;
        assert_eq!(lane.live().limit, 6, "30 s of cooldown, then 10 s quiet");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(lane.live().limit, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn slots_wait_under_a_cut_limit_and_a_freed_one_lets_the_next_in() {
        let lane = Throttle::new(2).lane("m");
        let cancel = CancellationToken::new();
        let first = lane.acquire(&cancel).await.unwrap();
        lane.rate_limited(None);
        assert_eq!(lane.live().limit, 1);
        let waiting = tokio::spawn({
            let lane = Arc::clone(&lane);
            let cancel = cancel.clone();
            async move { lane.acquire(&cancel).await.is_some() }
        });
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!waiting.is_finished(), "the limit of 1 is taken");
        drop(first);
        assert!(waiting.await.unwrap());
        assert_eq!(lane.report().queued_ms, 1_000);
    }

    #[tokio::test(start_paused = true)]
    async fn growth_lets_a_waiting_call_in_without_a_freed_slot() {
        let lane = Throttle::new(2).lane("m");
        let cancel = CancellationToken::new();
        let _held = lane.acquire(&cancel).await.unwrap();
        lane.rate_limited(None);
        let waiting = tokio::spawn({
            let lane = Arc::clone(&lane);
            let cancel = cancel.clone();
            async move { lane.acquire(&cancel).await }
        });
        tokio::task::yield_now().await;
        tokio::time::advance(Duration::from_secs(11)).await;
        let _second = waiting
            .await
            .unwrap()
            .expect("a slot once the limit grew back");
        assert_eq!(lane.live().in_flight, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_wait_takes_no_slot() {
        let lane = Throttle::new(1).lane("m");
        let cancel = CancellationToken::new();
        let _held = lane.acquire(&cancel).await.unwrap();
        let other = CancellationToken::new();
        other.cancel();
        assert!(lane.acquire(&other).await.is_none());
        assert_eq!(lane.live().in_flight, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_quota_is_recorded_once_and_lanes_are_per_model() {
        let throttle = Throttle::new(4);
        let lane = throttle.lane("a");
        lane.quota("spent");
        lane.quota("spent again");
        throttle.lane("b");
        let reports = throttle.reports();
        assert_eq!(reports.len(), 1, "a lane with nothing to say is left out");
        assert_eq!(reports[0].model, "a");
        assert_eq!(limits(&lane), [(4, LimitReason::Quota)]);
        assert_eq!(throttle.spent().as_deref(), Some("spent"), "the first kept");
        assert!(Arc::ptr_eq(&lane, &throttle.lane("a")));
    }
}
