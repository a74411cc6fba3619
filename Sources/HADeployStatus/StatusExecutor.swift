import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import HADeployReporting

/// Runs a status plan: every device at once, each under the plan's deadline, one device's silence
/// never holding up the others. Nothing is installed, mounted or launched.
public struct StatusExecutor: Sendable {
    public var plan: StatusPlan
    public var driver: @Sendable (DevicePlan) throws -> any DeviceDriver
    /// The report's time and every device's deadline.
    public var clock: any WallClock

    public init(
        plan: StatusPlan, driver: @escaping @Sendable (DevicePlan) throws -> any DeviceDriver,
        clock: any WallClock
    ) {
        self.plan = plan
        self.driver = driver
        self.clock = clock
    }

    public func run() async -> StatusReport {
        let checkedAt = clock.now()
        let results = await withTaskGroup(of: (Int, DeviceStatus).self) { group in
            for (index, device) in plan.devices.enumerated() {
                group.addTask { (index, await self.status(of: device)) }
            }
            var collected: [(Int, DeviceStatus)] = []
            for await result in group { collected.append(result) }
            return collected.sorted { $0.0 < $1.0 }.map(\.1)
        }
        return StatusReport(version: plan.version.description, checkedAt: checkedAt, devices: results)
    }

    func status(of device: DeviceStatusPlan) async -> DeviceStatus {
        let started = clock.instant()
        let backend = device.device.backend.label
        if case .notOnThisHost(let reason) = device.device.availability {
            return Self.assess(
                device, facts: .unreachable(reason), notOnThisHost: reason, seconds: 0, plan: plan,
                now: clock.now())
        }
        if case .failedHere(let reason) = device.device.availability {
            return Self.assess(
                device, facts: .unreachable(reason), notOnThisHost: nil, seconds: 0, plan: plan,
                now: clock.now())
        }
        let query = StatusQuery(
            bundleID: device.expected.bundleID, executable: device.expected.executable, backend: backend)
        let deadline = Duration.checkedSeconds(plan.deadlineSeconds)
        let facts: DeviceFacts
        do {
            let driver = try driver(device.device)
            facts =
                await Self.withDeadline(deadline, clock: clock) { await driver.facts(query) }
                ?? .unreachable(
                    "no answer within \(Int(plan.deadlineSeconds)) s: check that the device is on, unlocked and "
                        + "connected, then run status again")
        } catch {
            facts = .unreachable(SystemErrorText.message(error))
        }
        let seconds = Double(clock.elapsed(since: started).components.seconds)
        return Self.assess(
            device, facts: facts, notOnThisHost: nil, seconds: seconds, plan: plan, now: clock.now())
    }

    /// `body`'s answer, or nil when `deadline` passes first. The body is cancelled then and left
    /// behind: a driver stuck in a blocking call cannot hold up the answer (a task group would wait).
    static func withDeadline<T: Sendable>(
        _ deadline: Duration, clock: any WallClock, _ body: @escaping @Sendable () async -> T
    ) async -> T? {
        let once = FirstAnswer<T?>()
        return await withCheckedContinuation { continuation in
            once.arm(continuation)
            let work = Task { once.give(await body()) }
            // After an early answer the timer's `nil` is dropped.
            Task {
                try? await clock.sleep(for: deadline)
                work.cancel()
                once.give(nil)
            }
        }
    }

    /// The facts against the plan: build state, reboot since the last deploy, what needs attention.
    static func assess(
        _ device: DeviceStatusPlan, facts: DeviceFacts, notOnThisHost: String?, seconds: Double,
        plan: StatusPlan, now: Date
    ) -> DeviceStatus {
        let record = device.lastDeploy
        let build: BuildState
        switch facts.installed {
        case .known(nil): build = .missing
        case .known(let installed?): build = installed == device.expected.build ? .upToDate : .outdated
        case .unavailable: build = .unknown
        }
        let dashboard: Fact<DashboardNow>
        switch facts.appLog {
        case .known(let data?):
            dashboard = Self.dashboard(in: data)
        case .known(nil):
            dashboard = .unavailable("the app has no log yet (never launched)")
        case .unavailable(let reason):
            dashboard = .unavailable(reason)
        }
        let rebooted = Self.rebooted(facts.boot, since: record?.deployedAt)
        var attention: [String] = []
        let reasons = [
            facts.unreachable, facts.installed.reason, facts.running.reason, facts.appLog.reason,
            facts.battery.reason, facts.storage.reason, facts.profile.reason,
        ]
        let needsUnlock = reasons.contains { $0?.contains(DeviceLockWords.beforeFirstUnlock) == true }
        if notOnThisHost == nil {
            if needsUnlock {
                attention.append(
                    "\(DeviceLockWords.beforeFirstUnlock): enter its passcode once — until then nothing on it "
                        + "can be read, installed or launched")
            } else if let reason = facts.unreachable {
                attention.append("not reached: \(reason)")
            } else {
                switch build {
                case .missing: attention.append("the app is not installed: run hadeploy \(device.device.id)")
                case .outdated:
                    attention.append(
                        "outdated: \(facts.installed.value??.description ?? "?") installed, a deploy would install "
                            + "\(device.expected.build.description)")
                case .upToDate, .unknown: break
                }
                if build != .missing, facts.running.value == false {
                    attention.append("the app is not running")
                }
                if let now = dashboard.value, !now.loaded { attention.append("dashboard: \(now.summary)") }
                if let battery = facts.battery.value, battery.level <= plan.thresholds.batteryPercent,
                    !battery.charging
                {
                    attention.append(
                        "battery low: \(battery.level) %"
                            + (battery.externalPower == false ? ", not on a charger" : ", not charging"))
                }
                if let storage = facts.storage.value, storage.availableBytes < plan.thresholds.freeBytes {
                    attention.append("storage low: \(Format.bytes(storage.availableBytes)) free")
                }
                if rebooted.value == true { attention.append("restarted since the last deploy") }
                if let line = Self.profileAttention(facts.profile, now: now) {
                    attention.append(line)
                }
            }
        }
        var status = DeviceStatus(
            id: device.device.id, name: facts.device?.name ?? device.device.name,
            backend: device.device.backend.label, notOnThisHost: notOnThisHost,
            reachable: facts.device != nil, unreachable: notOnThisHost == nil ? facts.unreachable : nil,
            ios: facts.device.map { .known($0.iosVersion) }
                ?? .unavailable(facts.unreachable ?? "not reached"),
            build: build, installed: facts.installed, expected: device.expected, running: facts.running,
            dashboard: dashboard, lastDeployedAt: record?.deployedAt, lastVerifiedAt: record?.verifiedAt,
            battery: facts.battery, storage: facts.storage, boot: facts.boot, rebootedSinceDeploy: rebooted,
            attention: attention, seconds: seconds)
        status.profile = facts.profile
        status.needsUnlock = needsUnlock
        if device.device.backend.lookup == .network, let udid = device.device.udid?.value,
            let wifi = WiFiMuxer.found(udid: udid)
        {
            status.address = wifi.address
            status.foundBy = wifi.foundBy
        }
        return status
    }

    /// Days before its profile expires that a device needs attention: an expired development profile
    /// keeps the app from opening at its next launch (a reboot, a crash, iOS killing it).
    public static let profileWarningDays = 14

    /// The installed build's profile, expired or expiring within ``profileWarningDays``.
    public static func profileAttention(_ profile: Fact<ProfileState?>, now: Date) -> String? {
        guard let profile = profile.value ?? nil, let expires = profile.expires else { return nil }
        let day = ISO8601DateFormatter.string(
            from: expires, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        if expires <= now {
            return
                "provisioning profile '\(profile.name)' (\(profile.uuid)) expired on \(day): the app will not "
                + "open at its next launch — renew the profile, build and deploy"
        }
        let days = Int(expires.timeIntervalSince(now) / 86_400)
        guard days < profileWarningDays else { return nil }
        return
            "provisioning profile '\(profile.name)' expires on \(day) (in \(days) day\(days == 1 ? "" : "s")): "
            + "renew it, build and deploy before then"
    }

    /// A boot time after the deploy; else the Developer Disk Image the deploy mounted, gone.
    public static func rebooted(_ boot: Fact<BootState>, since deployedAt: Date?) -> Fact<Bool> {
        guard let deployedAt else { return .unavailable("no deploy from here recorded") }
        switch boot {
        case .unavailable(let reason):
            return .unavailable(reason)
        case .known(let state):
            if let bootedAt = state.bootedAt { return .known(bootedAt > deployedAt) }
            if let mounted = state.developerImageMounted { return .known(!mounted) }
            return .unavailable("the device gives no boot time")
        }
    }

    /// The newest session of the app's log.
    static func dashboard(in data: Data) -> Fact<DashboardNow> {
        guard let session = AppLogSession.sessions(in: String(decoding: data, as: UTF8.self)).last else {
            return .unavailable("the app's log has no session yet")
        }
        let summary: String
        var loaded = false
        switch AppLogVerdict.of(session) {
        case .received(let shape):
            summary = "loaded: \(shape)"
            loaded = true
        case .generatedDefault:
            summary = "loaded: the generated default dashboard"
            loaded = true
        case .failed(let reason):
            summary = "failed: \(reason)"
        case .waiting(let last):
            summary = "no dashboard yet (last entry: \(last ?? "none"))"
        }
        return .known(DashboardNow(sessionStarted: session.date, summary: summary, loaded: loaded))
    }
}

/// Resumes a continuation with the first value given; later ones are dropped.
final class FirstAnswer<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?
    private var answered = false

    func arm(_ continuation: CheckedContinuation<T, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    func give(_ value: T) {
        let taken = lock.withLock { () -> CheckedContinuation<T, Never>? in
            guard !answered else { return nil }
            answered = true
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(returning: value)
    }
}
