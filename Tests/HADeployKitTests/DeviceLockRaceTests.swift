import Foundation
import HADeployCore
import Testing

@testable import HADeployKit

#if canImport(Glibc)
    import Glibc
#endif

/// The per-device lock under real contention: separate processes (the `hadeploy-lock-racer` helper,
/// which calls `DeviceLock.acquire` as a deploy does) start at the same instant, after an owner that
/// died holding the lock. No two may ever hold it at once.
struct DeviceLockRaceTests {
    static let rounds = 50
    static let racers = 5

    func racerPath() throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL {
            candidates.append(executable.deletingLastPathComponent())
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let path = directory.appendingPathComponent("hadeploy-lock-racer").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw CocoaError(
            .fileNoSuchFile,
            userInfo: [NSLocalizedDescriptionKey: "hadeploy-lock-racer not built (swift build --build-tests)"]
        )
    }

    func spawn(_ path: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    @Test func fiveRacingProcessesAfterADeadOwnerNeverOverlap() throws {
        let racer = try racerPath()
        let root = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lock-race-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var overlaps: [String] = []
        var holds = 0
        for round in 0..<Self.rounds {
            let directory = root.appendingPathComponent("round-\(round)")
            let journal = root.appendingPathComponent("journal-\(round)")
            // The previous owner takes the lock and is killed holding it (a crash, kill -9).
            let dead = try spawn(racer, [directory.path, journal.path, "0", "0", "die"])
            dead.waitUntilExit()
            #expect(dead.terminationReason == .uncaughtSignal)
            #expect(
                FileManager.default.fileExists(
                    atPath: directory.appendingPathComponent("RACE-UDID.lock").path))
            // Five runs start at once, a little after they are all spawned.
            let startAt = DispatchTime.now().uptimeNanoseconds + 150_000_000
            let processes = try (0..<Self.racers).map { _ in
                try spawn(racer, [directory.path, journal.path, "\(startAt)", "3"])
            }
            for process in processes {
                process.waitUntilExit()
                #expect(process.terminationStatus == 0, "a racer failed in round \(round)")
            }
            let text = (try? String(contentsOf: journal, encoding: .utf8)) ?? ""
            let intervals = text.split(separator: "\n").compactMap { line -> (UInt64, UInt64)? in
                let parts = line.split(separator: " ").compactMap { UInt64($0) }
                return parts.count == 3 ? (parts[0], parts[1]) : nil
            }.sorted { $0.0 < $1.0 }
            #expect(intervals.count == Self.racers, "round \(round): \(intervals.count) racers held the lock")
            holds += intervals.count
            for (first, second) in zip(intervals, intervals.dropFirst()) where second.0 < first.1 {
                overlaps.append(
                    "round \(round): held twice for \(Double(first.1 - second.0) / 1e6) ms")
            }
        }
        #expect(overlaps.isEmpty, "\(overlaps)")
        #expect(holds == Self.rounds * Self.racers)
    }

    @Test func theLockFileIsOwnerOnlyAndNamesItsHolder() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lock-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let lock = try DeviceLock.acquire(device: "ipad", key: "UDID-1", directory: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: lock.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let folder = try FileManager.default.attributesOfItem(atPath: directory.path)
        #expect((folder[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(throws: DeviceBusyError.self) {
            try DeviceLock.acquire(device: "ipad", key: "UDID-1", directory: directory)
        }
        do {
            _ = try DeviceLock.acquire(device: "ipad", key: "UDID-1", directory: directory)
        } catch let busy as DeviceBusyError {
            #expect(busy.pid == getpid())
        }
        lock.release()
        let again = try DeviceLock.acquire(device: "ipad", key: "UDID-1", directory: directory)
        again.release()
    }
}
