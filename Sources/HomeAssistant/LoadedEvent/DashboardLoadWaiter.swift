import HADeployCore

/// Waits for the app's `ha_dashboard_loaded` event after a launch.
///
/// ```swift
/// let waiter = try await DashboardLoadWaiter.subscribe(on: connection, deployID: id, device: "ipad2")
/// try await launchApp()                                  // subscribe BEFORE this
/// switch await waiter.wait(timeout: .seconds(60)) { … }
/// ```
///
/// Only an event whose `deploy_id` (and `device`, when given) match counts. The reason for
/// `notLoaded` is `timed_out`, `home_assistant_unreachable` (the connection was lost and not back at
/// the deadline, or closed for good), or whatever a transport passes to ``abort(_:)``.
public actor DashboardLoadWaiter {
    public let deployID: String
    public let device: String?
    private let connection: HomeAssistantConnection
    private let subscription: Subscription<HomeAssistantEvent>
    private let clock: any WallClock
    private var match: (event: DashboardLoadedEvent, at: ContinuousClock.Instant)?
    private var aborted: NotLoadedReason?
    private var ended: NotLoadedReason?
    private var waiter: CheckedContinuation<DashboardLoadOutcome, Never>?
    private var waitStart: ContinuousClock.Instant?
    private var outcome: DashboardLoadOutcome?
    private var consumer: Task<Void, Never>?

    private init(
        connection: HomeAssistantConnection, subscription: Subscription<HomeAssistantEvent>, deployID: String,
        device: String?
    ) {
        self.connection = connection
        self.clock = connection.options.clock
        self.subscription = subscription
        self.deployID = deployID
        self.device = device
    }

    /// Subscribes to `ha_dashboard_loaded` now. The connection must be connected.
    public static func subscribe(
        on connection: HomeAssistantConnection, deployID: String, device: String? = nil
    )
        async throws -> DashboardLoadWaiter
    {
        let subscription = try await connection.subscribe(to: DashboardLoadedEvent.eventType)
        let waiter = DashboardLoadWaiter(
            connection: connection, subscription: subscription, deployID: deployID, device: device)
        await waiter.startConsuming()
        return waiter
    }

    private func startConsuming() {
        let subscription = self.subscription
        consumer = Task { [weak self] in
            do {
                for try await event in subscription {
                    await self?.offer(event)
                }
                await self?.subscriptionEnded(detail: "the connection was closed")
            } catch {
                await self?.subscriptionEnded(detail: "\(error)")
            }
        }
    }

    private func offer(_ event: HomeAssistantEvent) {
        guard match == nil, let loaded = DashboardLoadedEvent(event), loaded.deployID == deployID,
            device == nil || loaded.device == device
        else { return }
        match = (loaded, clock.instant())
        settle()
    }

    private func subscriptionEnded(detail: String) {
        guard ended == nil else { return }
        ended = .homeAssistantUnreachable(server: connection.options.server.baseURL, detail: detail)
        settle()
    }

    /// Ends a pending or future wait with `reason` (a transport saw the app crash, say).
    public func abort(_ reason: NotLoadedReason) {
        guard aborted == nil else { return }
        aborted = reason
        settle()
    }

    /// Waits up to `timeout` for the matching event. Returns at once if it already came.
    /// Later calls return the first outcome.
    public func wait(timeout: Duration) async -> DashboardLoadOutcome {
        if let outcome { return outcome }
        let start = clock.instant()
        waitStart = start
        let reconnectsBefore = await connection.reconnectCount
        if let settled = settledOutcome() { return finish(settled) }
        let clock = self.clock
        let timer = Task { [weak self] in
            try? await clock.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.deadlinePassed(timeout: timeout, reconnectsBefore: reconnectsBefore)
        }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<DashboardLoadOutcome, Never>) in
            if let settled = settledOutcome() {
                continuation.resume(returning: settled)
            } else {
                waiter = continuation
            }
        }
        timer.cancel()
        return finish(result)
    }

    /// Unsubscribes. The waiter cannot be used afterwards.
    public func cancel() async {
        consumer?.cancel()
        await subscription.cancel()
    }

    private func finish(_ result: DashboardLoadOutcome) -> DashboardLoadOutcome {
        if outcome == nil { outcome = result }
        return outcome ?? result
    }

    private func settledOutcome() -> DashboardLoadOutcome? {
        if let match {
            let after = waitStart.map { match.at - $0 } ?? .zero
            return .loaded(after: max(after, .zero), match.event)
        }
        if let aborted { return .notLoaded(aborted) }
        if let ended { return .notLoaded(ended) }
        return nil
    }

    private func settle() {
        guard let waiter, let settled = settledOutcome() else { return }
        self.waiter = nil
        waiter.resume(returning: settled)
    }

    private func deadlinePassed(timeout: Duration, reconnectsBefore: Int) async {
        guard waiter != nil, settledOutcome() == nil else { return }
        let state = await connection.state
        let lostSince = await connection.disconnectedSince
        let reconnects = await connection.reconnectCount - reconnectsBefore
        let reason: NotLoadedReason
        if state != .connected {
            let lost =
                lostSince.map { "connection lost \(clock.elapsed(since: $0).secondsText) ago, \(state)" }
                ?? "\(state)"
            reason = .homeAssistantUnreachable(server: connection.options.server.baseURL, detail: lost)
        } else {
            reason = .timedOut(after: timeout, device: device, reconnects: reconnects)
        }
        guard let waiter, settledOutcome() == nil else { return }
        self.waiter = nil
        waiter.resume(returning: .notLoaded(reason))
    }
}
