import Foundation
import Logging
import TestSupport
import Testing
import VirtualDevice

@testable import MobileDevice

/// A log handler that runs a hook on matching messages (the test's window into "about to retry").
struct HookLogHandler: LogHandler {
    let hook: @Sendable (String) -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        hook(event.message.description)
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

@Suite(.serialized) struct FaultTests {
    private func bigApp(_ bundleID: String, in directory: URL) throws -> URL {
        var spec = TestApps.Spec()
        spec.bundleID = bundleID
        spec.payloadBytes = 8 * 1_048_576
        return try TestApps.makeIPA(spec, in: directory)
    }

    @Test func dropMidUploadFailsClearlyAndLeavesNothingBehind() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let directory = try temporaryDirectory("drop")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = try bigApp("io.hadeploy.test.drop", in: directory)
        let device = try await emulator.connect(name)
        try await emulator.daemon.inject(.dropUploadAfter(bytes: 3 * 1_048_576), udid: udid)

        let error = await #expect(throws: MobileDeviceError.self) { try await device.install(artifact: ipa) }
        #expect(error?.kind == .connectionLost)
        #expect(error?.step.hasPrefix("afc_file_write") == true)
        #expect(error?.description.contains("retried once") == true)
        #expect(error?.description.contains("nothing was installed") == true)
        try await emulator.daemon.clearFaults(udid: udid)
        let listed = try await DebianTool.run(
            "ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(!listed.output.contains("io.hadeploy.test.drop"), "\(listed.output)")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: emulator.staging(name).path)
        #expect(leftovers.isEmpty, "PublicStaging still holds \(leftovers)")
    }

    @Test func cancellingMidUploadStillRemovesThePartialUpload() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let directory = try temporaryDirectory("cancel")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = try bigApp("io.hadeploy.test.cancel", in: directory)
        let device = try await emulator.connect(name)
        // A slow link, so Ctrl-C lands mid-upload.
        try await emulator.daemon.inject(.throttle(bytesPerSecond: 1_048_576), udid: udid)
        let staging = emulator.staging(name)
        let install = Task { try await device.install(artifact: ipa) }
        func stagedBytes() -> Int {
            let files = (try? FileManager.default.subpathsOfDirectory(atPath: staging.path)) ?? []
            return files.reduce(0) { total, file in
                let size = try? FileManager.default.attributesOfItem(
                    atPath: staging.appendingPathComponent(file).path)[.size]
                return total + ((size as? NSNumber)?.intValue ?? 0)
            }
        }
        let waitStarted = ContinuousClock.now
        while stagedBytes() < 1_048_576 && ContinuousClock.now - waitStarted < .seconds(20) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(stagedBytes() >= 1_048_576, "the upload never got going")
        install.cancel()
        let cancelled = ContinuousClock.now
        let outcome = await install.result
        #expect(ContinuousClock.now - cancelled < .seconds(15))
        guard case .failure(let error) = outcome else {
            Issue.record("the install finished despite the cancel")
            return
        }
        #expect((error as? MobileDeviceError)?.kind == .cancelled, "\(error)")
        try await emulator.daemon.clearFaults(udid: udid)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: staging.path)
        #expect(leftovers.isEmpty, "PublicStaging still holds \(leftovers) (\(stagedBytes()) bytes)")
    }

    @Test func transientDropIsRetriedOnceAndInstalls() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let directory = try temporaryDirectory("retry")
        defer { try? FileManager.default.removeItem(at: directory) }
        let ipa = try bigApp("io.hadeploy.test.retry", in: directory)
        let retries = Counter()
        let daemon = emulator.daemon
        // The cable comes back before the retry: clear the fault when the retry is announced.
        let logger = Logger(label: "retry-test") { _ in
            HookLogHandler { message in
                guard message.contains("retrying once") else { return }
                retries.increment()
                let cleared = DispatchSemaphore(value: 0)
                Task.detached {
                    try? await daemon.clearFaults(udid: udid)
                    cleared.signal()
                }
                cleared.wait()
            }
        }
        let device = try await emulator.connect(name, options: emulator.options(logger: logger))
        try await emulator.daemon.inject(.dropUploadAfter(bytes: 2 * 1_048_576), udid: udid)
        #expect(try await device.install(artifact: ipa) == .installed)
        #expect(retries.value == 1)
        let listed = try await DebianTool.run(
            "ideviceinstaller", ["-u", udid, "-l"], socket: emulator.socket)
        #expect(listed.output.contains("io.hadeploy.test.retry"), "\(listed.output)")
    }

    @Test func stalledInstallHitsTheDeadlineWithTheStepNamed() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let directory = try temporaryDirectory("stall")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.stall"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        var timeouts = USBTimeouts()
        timeouts.install = .seconds(3)
        let device = try await emulator.connect(name, options: emulator.options(timeouts: timeouts))
        try await emulator.daemon.inject(.stall(at: .install), udid: udid)
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) { try await device.install(artifact: ipa) }
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.step == "installation_proxy Install")
        #expect(error?.description.contains("not complete within 3 s") == true)
        // Told apart from a slow link: the device went quiet after its first status.
        #expect(
            error?.description.contains("it stopped, it is not merely slow") == true,
            "\(String(describing: error))")
        try await emulator.daemon.clearFaults(udid: udid)
    }

    @Test func aConnectionClosedDuringTheInstallEndsTheStepAtOnce() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let directory = try temporaryDirectory("closed")
        defer { try? FileManager.default.removeItem(at: directory) }
        var spec = TestApps.Spec()
        spec.bundleID = "io.hadeploy.test.closed"
        let ipa = try TestApps.makeIPA(spec, in: directory)
        var timeouts = USBTimeouts()
        timeouts.install = .seconds(60)
        let device = try await emulator.connect(name, options: emulator.options(timeouts: timeouts))
        // As when usbmuxd is killed: the socket closes without a word, mid-install.
        try await emulator.daemon.inject(.closeConnection(at: .install), udid: udid)
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) { try await device.install(artifact: ipa) }
        try await emulator.daemon.clearFaults(udid: udid)
        #expect(
            ContinuousClock.now - started < .seconds(10),
            "noticed only after \(ContinuousClock.now - started)")
        #expect(error?.kind == .connectionLost, "\(String(describing: error))")
        #expect(
            error?.description.contains("connection to usbmuxd lost") == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("raise") != true)
    }

    @Test func stalledLockdownHitsTheDeadlineWithTheStepNamed() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        var timeouts = USBTimeouts()
        timeouts.handshake = .seconds(2)
        timeouts.request = .seconds(2)
        try await emulator.daemon.inject(.stall(at: .lockdown), udid: udid)
        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) {
            try await emulator.connect(name, options: emulator.options(timeouts: timeouts))
        }
        #expect(ContinuousClock.now - started < .seconds(8))
        #expect(error?.kind == .deadlineExceeded)
        #expect(error?.step.hasPrefix("lockdownd_") == true)
        #expect(error?.description.contains("no answer within 2 s") == true, "\(String(describing: error))")
        try await emulator.daemon.clearFaults(udid: udid)
    }

    /// A lockdownd that answers with a broken frame: libimobiledevice waits for the promised bytes
    /// until its own timeout, and used to leave the user with "no answer within 45 s".
    @Test func aGarbledLockdownReplyIsSaidAtOnceWithWhatCameBack() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        try await emulator.daemon.inject(.garble(at: .lockdown), udid: udid)
        // The real client fails on the same twin: the fault is a broken device, not a hadeploy quirk.
        let info = try await DebianTool.run(
            "timeout", ["-s", "KILL", "5", "/usr/bin/ideviceinfo", "-u", udid, "-k", "DeviceName"],
            socket: emulator.socket)
        #expect(info.status != 0, "ideviceinfo read a garbled lockdownd: \(info.output)")

        let started = ContinuousClock.now
        let error = await #expect(throws: MobileDeviceError.self) {
            try await emulator.connect(name)
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(error?.kind == .protocolError)
        #expect(error?.step.hasPrefix("lockdownd_") == true)
        let said = error?.description ?? ""
        #expect(said.contains("its reply announced 1024 bytes but 43 came"), "\(said)")
        #expect(said.contains("3c 68 74 6d 6c"), "the bytes received: \(said)")
        #expect(said.contains("Restart the device"), "\(said)")
        try await emulator.daemon.clearFaults(udid: udid)
        _ = try await emulator.connect(name)
    }

    @Test func theLockdownProbeTellsAHealthyReplyFromAGarbledOne() async throws {
        let emulator = try await SharedEmulator.shared.context()
        let name = SharedEmulator.Device.faults
        let udid = await emulator.udid(name)
        let address = emulator.socket
        // Off the cooperative pool, as hadeploy probes: a blocking probe on one of its threads can
        // starve the in-process emulator that has to answer it (two threads on two cores).
        #expect(await LockdownProbe.inBackground(udid: udid, address: address) == .answered)
        try await emulator.daemon.inject(.garble(at: .lockdown), udid: udid)
        let finding = await LockdownProbe.inBackground(udid: udid, address: address)
        guard case .broken(let what) = finding else {
            Issue.record("a garbled lockdownd was found \(finding)")
            return
        }
        #expect(what.contains("announced 1024 bytes but 43 came before the wait ended"), "\(what)")
        try await emulator.daemon.clearFaults(udid: udid)
        try await emulator.daemon.inject(.stall(at: .lockdown), udid: udid)
        #expect(await LockdownProbe.inBackground(udid: udid, address: address, timeout: 1) == .silent)
        try await emulator.daemon.clearFaults(udid: udid)
    }
}
