import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployKit
import HostCrypto
import TestSupport
import Testing

@testable import Versioning

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file hashed is the file installed, and hashing holds no artifact in memory.
struct ArtifactIntegrityTests {
    /// A mini4 plan that installs the demo app built into `root/artifacts`, named by path and hash.
    static func world() throws -> (plan: DeployPlan, app: URL, root: URL) {
        let root = try temporaryDirectory("artifact-integrity")
        let (device, _, matrix) = try DriverTestPlans.plan("mini4", host: .linux)
        let flavour = try #require(matrix.flavours.first { $0.name == device.flavour })
        let artifact = try DemoAppBuilder(bundleID: "io.hadeploy.demo").build(
            flavour: flavour, marketingVersion: "1.0.1", buildNumber: 1,
            into: root.appendingPathComponent("artifacts"), now: Date(), in: TestHost.fileSystem)
        var plan = DeployPlan(
            version: GitVersion(
                marketingVersion: "1.0.1", buildNumber: 1, tag: "v1.0.1", commitsSinceTag: 0, dirty: false,
                shallow: false), deployID: "d-1",
            server: .unset(["HA_SERVER"]), verify: false, builds: [], devices: [device], warnings: [])
        plan.artifacts = .files([
            device.flavour: PlannedArtifact(
                path: artifact.path, sha256: try ArtifactDigest.sha256(artifact.path, in: TestHost.fileSystem)
            )
        ])
        return (plan, URL(fileURLWithPath: artifact.path), root)
    }

    /// Before: the artifact was hashed, then read again by path at install time, so a build swapped in
    /// between was installed and reported as the planned one.
    @Test func whatIsInstalledIsAPrivateCopyOfWhatWasHashedNotThePathThatCanBeSwapped() throws {
        let (plan, app, root) = try Self.world()
        defer { try? FileManager.default.removeItem(at: root) }
        let copies = root.appendingPathComponent("state/artifacts/given-d-1")
        let artifacts = try plan.artifacts.artifacts(
            for: plan, host: .linux, copyingInto: copies, now: Date(), in: TestHost.fileSystem)
        let installed = try #require(artifacts.values.first)
        // Known by its physical path (/private/var/… on a Mac, whose /var is a link).
        let copiesPath = RealPath.of(copies.path) ?? copies.path
        #expect(installed.path.hasPrefix(copiesPath + "/"), "\(installed.path) is not under \(copiesPath)")
        let mode = try FileManager.default.attributesOfItem(atPath: installed.path)[.posixPermissions] as? Int
        let folderMode =
            try FileManager.default.attributesOfItem(
                atPath: URL(fileURLWithPath: installed.path).deletingLastPathComponent().path)[
                .posixPermissions]
            as? Int
        #expect(
            folderMode == 0o700,
            "the copy's folder is this user's only: \(String(folderMode ?? 0, radix: 8)) \(mode ?? 0)")

        // Another build swapped in at the planned path after the check.
        let executable = app.appendingPathComponent(installed.executable)
        try Data("#!/bin/sh\necho swapped\n".utf8).write(to: executable)
        guard case .files(let files) = plan.artifacts, let planned = files.values.first else {
            Issue.record("no planned artifact")
            return
        }
        #expect(try ArtifactDigest.sha256(app.path, in: TestHost.fileSystem) != planned.sha256)
        #expect(
            try ArtifactDigest.sha256(installed.path, in: TestHost.fileSystem) == planned.sha256,
            "what the devices get is still the planned build")
    }

    @Test func anArtifactChangedBeforeItWasCopiedIsRefusedAndNothingIsKept() throws {
        let (plan, app, root) = try Self.world()
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("changed".utf8).write(to: app.appendingPathComponent("changed.txt"))
        let copies = root.appendingPathComponent("state/artifacts/given-d-1")
        #expect(throws: ArtifactChanged.self) {
            try plan.artifacts.artifacts(
                for: plan, host: .linux, copyingInto: copies, now: Date(), in: TestHost.fileSystem)
        }
    }

    /// The copy is made and hashed in one pass: its digest is the original's and the copy's own, and
    /// it keeps what installs need: an executable's mode, links, read-only files and folders.
    @Test func thePrivateCopyKeepsModesAndLinksAndHashesAsTheOriginal() throws {
        let root = try temporaryDirectory("artifact-copy")
        defer {
            _ = try? FileManager.default.subpathsOfDirectory(atPath: root.path).map {
                try? FileManager.default.setAttributes(
                    [.posixPermissions: 0o755], ofItemAtPath: root.appendingPathComponent($0).path)
            }
            try? FileManager.default.removeItem(at: root)
        }
        let app = root.appendingPathComponent("given/HADashboard.app")
        let nested = app.appendingPathComponent("Frameworks/Kit.framework")
        try FileManager.default.createDirectory(at: nested, withIntermediateDirectories: true)
        let bytes = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })  // 3 MiB: several reads
        try bytes.write(to: app.appendingPathComponent("HADashboard"))
        try Data("<plist/>".utf8).write(to: app.appendingPathComponent("Info.plist"))
        try Data("kit".utf8).write(to: nested.appendingPathComponent("Kit"))
        try FileManager.default.createSymbolicLink(
            atPath: nested.appendingPathComponent("Current").path, withDestinationPath: "Kit")
        let modes = [
            "HADashboard": 0o755, "Info.plist": 0o444, "Frameworks/Kit.framework/Kit": 0o555,
            "Frameworks/Kit.framework": 0o555,
        ]
        for (relative, mode) in modes {
            try FileManager.default.setAttributes(
                [.posixPermissions: mode], ofItemAtPath: app.appendingPathComponent(relative).path)
        }
        let folder = root.appendingPathComponent("copies")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

        let made = try ArtifactDigest.privateCopy(of: app.path, into: folder, in: TestHost.fileSystem)
        #expect(made.path == folder.appendingPathComponent("HADashboard.app").path)
        #expect(made.sha256 == (try ArtifactDigest.sha256(app.path, in: TestHost.fileSystem)))
        #expect(made.sha256 == (try ArtifactDigest.sha256(made.path, in: TestHost.fileSystem)))
        let copy = URL(fileURLWithPath: made.path)
        #expect(try Data(contentsOf: copy.appendingPathComponent("HADashboard")) == bytes)
        for (relative, mode) in modes {
            let copied =
                try FileManager.default.attributesOfItem(atPath: copy.appendingPathComponent(relative).path)[
                    .posixPermissions] as? Int
            #expect(copied == mode, "\(relative): \(String(copied ?? 0, radix: 8))")
        }
        #expect(
            try FileManager.default.destinationOfSymbolicLink(
                atPath: copy.appendingPathComponent("Frameworks/Kit.framework/Current").path) == "Kit")

        // An .ipa: one file, copied and hashed the same way (a zip's end record at its end).
        let ipa = root.appendingPathComponent("given/HADashboard.ipa")
        let archive = bytes + Self.endOfCentralDirectory
        try archive.write(to: ipa)
        let file = try ArtifactDigest.privateCopy(of: ipa.path, into: folder, in: TestHost.fileSystem)
        #expect(file.sha256 == (try ArtifactDigest.sha256(ipa.path, in: TestHost.fileSystem)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: file.path)) == archive)
    }

    /// An empty zip's end-of-central-directory record (PKWARE APPNOTE 4.3.16).
    static let endOfCentralDirectory = Data([0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18))

    /// Before: a 10 GB sparse `.ipa` was copied as 10 GB of real disk before "not a zip" (119 s), and a
    /// `.app` holding a 10 GB sparse file was installed. Now both are refused before a byte is copied,
    /// in a moment, under the path the user gave.
    @Test func aHugeOrFakeArtifactIsRefusedBeforeAnyCopyUnderTheUsersPath() throws {
        let root = try temporaryDirectory("artifact-huge")
        defer { try? FileManager.default.removeItem(at: root) }
        let folder = root.appendingPathComponent("copies")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func sparse(_ url: URL, size: UInt64, tail: Data = Data()) throws {
            #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
            let handle = try FileHandle(forWritingTo: url)
            try handle.truncate(atOffset: size - UInt64(tail.count))
            try handle.seekToEnd()
            try handle.write(contentsOf: tail)
            try handle.close()
        }
        let started = ContinuousClock.now
        let fake = root.appendingPathComponent("Fake.ipa")
        try sparse(fake, size: 10 << 30)
        let notZip = #expect(throws: ArtifactError.self) {
            try ArtifactDigest.privateCopy(of: fake.path, into: folder, in: TestHost.fileSystem)
        }
        #expect(notZip?.path == fake.path)
        #expect(notZip?.problem.contains("not a zip archive") == true, "\(String(describing: notZip))")

        let huge = root.appendingPathComponent("Huge.ipa")
        try sparse(huge, size: 10 << 30, tail: Self.endOfCentralDirectory)
        let tooBig = #expect(throws: ArtifactError.self) {
            try ArtifactDigest.privateCopy(of: huge.path, into: folder, in: TestHost.fileSystem)
        }
        #expect(tooBig?.path == huge.path)
        #expect(tooBig?.problem.contains("more than 4 GiB") == true, "\(String(describing: tooBig))")

        let app = root.appendingPathComponent("Big.app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true)
        try Data("<plist/>".utf8).write(to: app.appendingPathComponent("Info.plist"))
        try sparse(app.appendingPathComponent("Assets.car"), size: 10 << 30)
        let bigApp = #expect(throws: ArtifactError.self) {
            try ArtifactDigest.privateCopy(of: app.path, into: folder, in: TestHost.fileSystem)
        }
        #expect(bigApp?.path == app.path)
        #expect(bigApp?.problem.contains("more than 4 GiB") == true, "\(String(describing: bigApp))")

        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing was copied")
        #expect(ContinuousClock.now - started < .seconds(20))
    }

    /// Before: a 10 GB sparse file cost 10.5 GB of memory and ignored SIGTERM while it was read whole.
    @Test func hashingALargeFileTakesBoundedMemoryAndStopsWhenCancelled() async throws {
        let root = try temporaryDirectory("artifact-hash")
        defer { try? FileManager.default.removeItem(at: root) }
        let file = root.appendingPathComponent("App.ipa")
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 1 << 30)  // 1 GiB, sparse
        try handle.close()

        let before = Self.peakResidentBytes()
        let digest = try ArtifactDigest.sha256(file.path, in: TestHost.fileSystem)
        let grown = Self.peakResidentBytes() - before
        #expect(digest.count == 64)
        // The peak is the whole test process's, and the other suites run beside this one (145 MiB was
        // seen from them once, 518 MiB on a fresh machine's first run): the bound catches a whole-file
        // read (1 GiB and more), not their noise.
        #expect(grown < 900 << 20, "hashing 1 GiB grew the peak memory by \(grown >> 20) MiB")

        let huge = root.appendingPathComponent("Huge.ipa")
        #expect(FileManager.default.createFile(atPath: huge.path, contents: nil))
        let hugeHandle = try FileHandle(forWritingTo: huge)
        try hugeHandle.truncate(atOffset: 1 << 40)  // 1 TiB, sparse: minutes to read whole
        try hugeHandle.close()
        let hashing = Task { try ArtifactDigest.sha256(huge.path, in: TestHost.fileSystem) }
        try await Task.sleep(for: .milliseconds(200))
        let cancelledAt = ContinuousClock.now
        hashing.cancel()
        await #expect(throws: CancellationError.self) { try await hashing.value }
        #expect(ContinuousClock.now - cancelledAt < .seconds(5))
    }

    @Test func aFIFOGivenAsTheArtifactIsRefusedNotWaitedOn() throws {
        let root = try temporaryDirectory("artifact-fifo")
        defer { try? FileManager.default.removeItem(at: root) }
        let fifo = root.appendingPathComponent("App.ipa").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let error = #expect(throws: ArtifactError.self) {
            try ArtifactDigest.sha256(fifo, in: TestHost.fileSystem)
        }
        #expect(error?.description.contains("not a regular file") == true, "\(String(describing: error))")
    }

    static func peakResidentBytes() -> Int {
        TestPlatform.peakResidentBytes()
    }
}

/// Locks are per user. Before: without XDG_CACHE_HOME and HOME they went to `/tmp/hadeploy/locks`,
/// which the first user to run made (0700, theirs): every other user's deploy then failed to lock.
struct LockFolderTests {
    @Test func withoutHomeOrCacheVariablesLocksStayInTheAccountsHome() {
        let files = FakeFileSystem()
        let context = HADeployContext(
            environment: [:], runner: FailingRunner(), output: RecordingOutputSink(),
            currentDirectory: files.currentDirectory, fileSystem: files, clock: FakeClock(),
            system: FakeEnvironment())
        let folder = DeploySession.lockDirectory(context)
        #expect(folder.path == files.homeDirectory.appendingPathComponent(".cache/hadeploy/locks").path)
        #expect(!folder.path.hasPrefix(files.temporaryDirectory.path))
    }
}
