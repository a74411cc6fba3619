import DeployModel
import Foundation
import HADeployCore
import HomeAssistant

/// Decides whether one device loaded its dashboard from the evidence the real app leaves:
/// its `ha-log.txt` (read through the driver), its `active_dashboard` sensor in Home Assistant
/// (devices with `ha_integration`), and `ha_dashboard_loaded` for app builds that fire it.
///
/// The log decides when it can be read: its failure lines (`Auth failed`, `Lovelace config fetch
/// failed`, `=== CRASH:`) end the wait at once in the app's words, and a `Lovelace config
/// received` line counts only when Home Assistant's dashboard has that shape. When the log cannot
/// be read, the first of the other sources to report the dashboard decides.
public struct LoadEvidenceVerifier: Sendable {
    public struct Request: Sendable {
        public var artifact: Artifact
        /// The dashboard the app was told to open: `.some(nil)` = its default one; `.none` = none
        /// was sent, so the app keeps its own (read from its preferences, `ha_selected_dashboard`).
        public var dashboard: String??
        /// The device's name as the app registers it (lockdown DeviceName, or `ha_device:`).
        public var deviceName: String
        /// The device's app reports to Home Assistant (`-HAAutoRegister YES`, `ha_integration`).
        public var homeAssistantIntegration: Bool
        /// Read the app's log (false: the plan says this device's log is no evidence).
        public var appLog: Bool = true
        public var deployID: String
        public var timeout: Duration
    }

    /// A verifier with what it learnt before the launch, for the verify step.
    public struct Armed: Sendable {
        public var verifier: LoadEvidenceVerifier
        public var prepared: Prepared
    }

    /// What was known before the launch.
    public struct Prepared: Sendable {
        var baseline: AppLogBaseline
        /// The dashboard to expect: the one sent, else the app's own setting (`.none`: unknown).
        var dashboard: String??
        /// nil when the log cannot be read on this backend (with why in `logUnavailable`).
        var logUnavailable: String?
        var expected: ExpectedDashboard?
        var expectedError: String?
        var watch: (any ActiveDashboardWatch)?
    }

    public struct Outcome: Sendable {
        public var verification: Verification
        public var evidence: [LoadEvidence]
    }

    let driver: any DeviceDriver
    let verifier: any DashboardVerifier
    let request: Request
    /// The evidence's times, the deadline and the polling.
    let clock: any WallClock
    var pollInterval: Duration = .seconds(1)

    /// Before the launch: the log's size, the dashboard's shape on the server, the sensor's sentinel.
    public func prepare() async -> Prepared {
        var prepared = Prepared(baseline: AppLogBaseline(size: nil), dashboard: request.dashboard)
        if !request.appLog {
            prepared.logUnavailable = "the plan does not read this device's log"
        } else if prepared.dashboard == .none {
            prepared.dashboard = await appsOwnDashboard()
        }
        if prepared.logUnavailable == nil {
            do {
                let data = try await driver.appDataFile(
                    request.artifact, relativePath: AppLogBaseline.current)
                prepared.baseline = AppLogBaseline(data)
            } catch let error as AppDataUnavailable {
                prepared.logUnavailable = error.reason
            } catch {
                // Readable later, perhaps (a first install, a busy device): the header dates decide.
                prepared.baseline = AppLogBaseline(size: nil)
            }
        }
        if let dashboard = prepared.dashboard {
            do {
                prepared.expected = try await verifier.expectedDashboard(dashboard)
            } catch {
                prepared.expectedError = "\(error)"
            }
        }
        if request.homeAssistantIntegration {
            prepared.watch = await verifier.watchActiveDashboard(
                deviceName: request.deviceName, deployID: request.deployID)
        }
        return prepared
    }

    /// `ha_selected_dashboard` from the app's preferences: `.some(nil)` = its default dashboard,
    /// `.none` when the preferences cannot be read.
    func appsOwnDashboard() async -> String?? {
        let path = "Library/Preferences/\(request.artifact.bundleID).plist"
        guard let data = try? await driver.appDataFile(request.artifact, relativePath: path),
            let settings = try? PropertyListSerialization.propertyList(from: data, format: nil)
                as? [String: Any]
        else { return .none }
        let selected = settings["ha_selected_dashboard"] as? String
        return .some(selected?.isEmpty == false ? selected : nil)
    }

    func expectedSensorValue(_ prepared: Prepared) -> String? {
        guard let dashboard = prepared.dashboard else { return nil }
        return dashboard ?? "default"
    }

    /// After the launch: polls the sources until one decides or `request.timeout` runs out.
    public func wait(_ prepared: Prepared, launchedAt: Date, event: (any LoadedWaiter)? = nil) async
        -> Outcome
    {
        if let unreadable = prepared.logUnavailable, prepared.watch == nil, event == nil {
            // Nothing could ever prove it: say so at once instead of waiting out the deadline.
            return Outcome(
                verification: .skipped(
                    reason: "no evidence on this device: \(unreadable); turn on the app's Home Assistant "
                        + "integration for it (ha_integration) to verify through Home Assistant"),
                evidence: [])
        }
        let timeout = request.timeout
        let slot = EventSlot()
        let eventTask = event.map { waiter in Task { slot.set(await waiter.wait(timeout: timeout)) } }
        defer {
            eventTask?.cancel()
            if let event { Task { await event.cancel() } }
        }
        let deadline = clock.deadline(after: timeout)
        var logReadable = prepared.logUnavailable == nil
        var logLoaded = false
        var logReason: String?
        var sensorValue: String?
        while true {
            if Task.isCancelled {
                return Outcome(verification: .notLoaded(reason: "interrupted"), evidence: [])
            }
            if logReadable && !logLoaded {
                switch await readLog(prepared, launchedAt: launchedAt) {
                case .failed(let words):
                    return Outcome(
                        verification: .notLoaded(reason: "the app's log says: \(words)"), evidence: [])
                case .loaded:
                    logLoaded = true
                case .pending(let reason):
                    logReason = reason
                case .unavailable(let reason):
                    logReadable = false
                    logReason = reason
                }
            }
            let expectedValue = expectedSensorValue(prepared)
            if let watch = prepared.watch, sensorValue == nil || sensorValue != expectedValue {
                sensorValue = await watch.reportedValue()
            }
            // Without a dashboard to expect (none sent, settings unreadable), any report counts.
            let sensorLoaded = sensorValue != nil && (expectedValue == nil || sensorValue == expectedValue)
            let eventResult = slot.value
            let eventLoaded: Bool = {
                if case .loaded = eventResult { return true }
                return false
            }()
            if logLoaded || (!logReadable && (sensorLoaded || eventLoaded)) {
                var evidence: [LoadEvidence] = []
                if logLoaded { evidence.append(.appLog) }
                if sensorLoaded { evidence.append(.homeAssistant) }
                if eventLoaded { evidence.append(.event) }
                let seconds = clock.now().timeIntervalSince(launchedAt)
                return Outcome(verification: .loaded(seconds: seconds), evidence: evidence)
            }
            if clock.instant() >= deadline {
                let reason = await failureReason(
                    prepared, logReason: logReason, sensorValue: sensorValue, event: eventResult)
                return Outcome(verification: .notLoaded(reason: reason), evidence: [])
            }
            try? await clock.sleep(for: min(pollInterval, clock.remaining(until: deadline)))
        }
    }

    /// Where the event waiter's answer lands while the log and the sensor are polled.
    final class EventSlot: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Verification?
        var value: Verification? { lock.withLock { stored } }
        func set(_ value: Verification) { lock.withLock { stored = value } }
    }

    enum LogReading {
        case loaded
        case failed(String)
        case pending(String)
        case unavailable(String)
    }

    func readLog(_ prepared: Prepared, launchedAt: Date) async -> LogReading {
        let text: String
        do {
            guard
                let current = try await driver.appDataFile(
                    request.artifact, relativePath: AppLogBaseline.current)
            else { return .pending("the app has written no ha-log.txt yet") }
            text = try await prepared.baseline.newText(current: current) {
                try await driver.appDataFile(request.artifact, relativePath: AppLogBaseline.previous)
            }
        } catch let error as AppDataUnavailable {
            return .unavailable(error.reason)
        } catch {
            return .pending("the app's log could not be read: \(SystemErrorText.message(error))")
        }
        guard let session = prepared.baseline.newestSession(in: text, launchedAt: launchedAt) else {
            return .pending(Self.noSession)
        }
        // The app says which build ran (1.3): another build is not the one installed.
        let artifact = request.artifact
        if let ran = AppLogVerdict.appVersion(in: session),
            ran.version != artifact.marketingVersion || ran.build != artifact.buildNumber
        {
            return .failed(
                "[startup] App version: \(ran.version) (\(ran.build)) — the app that ran is not the build "
                    + "installed, \(artifact.marketingVersion) (\(artifact.buildNumber)); the device kept "
                    + "another copy of \(artifact.bundleID): deploy again with --force")
        }
        switch AppLogVerdict.of(session) {
        case .failed(let words):
            return .failed(words)
        case .waiting(let last):
            return .pending("the app's log shows no dashboard yet (last entry: \(last ?? "none"))")
        case .received(let shape):
            if prepared.dashboard == .none { return .loaded }
            guard let expected = prepared.expected else {
                return .pending(
                    "the app loaded \(shape), but Home Assistant's dashboard could not be read to compare")
            }
            if case .shape(shape) = expected { return .loaded }
            return .pending(
                "the app loaded a dashboard with \(shape), but \(dashboardName) has \(expected) "
                    + "(another dashboard, or an old one)")
        case .generatedDefault:
            if prepared.dashboard == .none { return .loaded }
            if case .generatedDefault = prepared.expected { return .loaded }
            return .pending(
                "the app shows its generated default dashboard, but \(dashboardName) has \(prepared.expected?.description ?? "a saved config")"
            )
        }
    }

    /// The reason when the app wrote nothing after the launch: it may never have opened.
    static let noSession = "no log session started after the launch"

    var dashboardName: String {
        switch request.dashboard {
        case .none: return "the app's own dashboard"
        case .some(.none): return "the default dashboard"
        case .some(.some(let name)): return "dashboard '\(name)'"
        }
    }

    func failureReason(_ prepared: Prepared, logReason: String?, sensorValue: String?, event: Verification?)
        async -> String
    {
        let seconds = Int(Double(request.timeout.components.seconds))
        var parts: [String] = []
        if let logReason { parts.append(logReason) }
        if let watch = prepared.watch {
            if let sensorValue {
                parts.append(
                    "Home Assistant: active_dashboard of '\(request.deviceName)' is '\(sensorValue)', "
                        + "expected '\(expectedSensorValue(prepared) ?? "any")'")
            } else {
                parts.append("Home Assistant: active_dashboard not reported (\(await watch.status()))")
            }
        }
        if case .notLoaded(let reason) = event { parts.append(reason) }
        if parts.isEmpty { parts.append("no evidence arrived") }
        return "\(dashboardName) not confirmed within \(seconds) s: " + parts.joined(separator: "; ")
    }
}
