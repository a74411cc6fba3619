import CIMobileDevice
import Foundation
import HADeployCore

extension USBDevice {
    /// Copies crash reports of `process` (the app's CFBundleExecutable) newer than `since` into
    /// `directory` and returns their paths (oldest first). Reports stay on the device.
    public func crashReports(since: Date, process: String, copyTo directory: URL) async throws -> [URL] {
        try await serialized {
            let (session, lockdown) = try await openLockdown()
            // crashreportmover moves pending reports into place and says "ping" when done (PROTOCOL.md §8).
            let mover = try await session.startService(
                "com.apple.crashreportmover", on: lockdown, timeouts: timeouts)
            let pinged = try await session.run("com.apple.crashreportmover ping", within: .seconds(25)) {
                let connection = try ServiceConnection(
                    device: session.handle, descriptor: mover, identity: session.identity)
                var received: [UInt8] = []
                for _ in 0..<10 where !String(decoding: received, as: UTF8.self).contains("ping") {
                    received += try connection.receive(
                        maximum: 4, timeoutMilliseconds: 2000, step: "crashreportmover")
                }
                return String(decoding: received, as: UTF8.self).contains("ping")
            }
            if !pinged { logger.warning("crashreportmover did not say ping; reading what is there") }
            let copier = try await session.startService(
                "com.apple.crashreportcopymobile", on: lockdown, timeouts: timeouts)
            let afc = try await session.run(
                "afc_client_new (crashreportcopymobile)", within: timeouts.request
            ) {
                try AFCClient(device: session.handle, descriptor: copier, identity: session.identity)
            }
            let threshold = since.addingTimeInterval(-Double(options.crashClockTolerance.milliseconds) / 1000)
            let matches = try await session.run("list crash reports", within: timeouts.request) {
                try CrashReportFinder.find(in: afc, process: process, newerThan: threshold)
            }
            do {
                try options.fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw MobileDeviceError(
                    .hostIO, step: "create \(directory.path)", device: identity, reason: "\(error)",
                    nextStep: "Choose a writable report directory.")
            }
            var copied: [URL] = []
            for report in matches {
                let target = directory.appendingPathComponent(report.localName)
                try await session.run("copy crash report \(report.path)", within: timeouts.request) {
                    try CrashReportFinder.copy(report.path, from: afc, to: target, in: self.fileSystem)
                }
                copied.append(target)
            }
            return copied
        }
    }
}

/// A crash report on the device.
struct CrashReportEntry: Sendable, Equatable {
    let path: String
    let modified: Date

    /// iOS 5 left ".synced" suffixes; idevicecrashreport strips them too.
    var localName: String {
        let name = (path as NSString).lastPathComponent
        return name.hasSuffix(".synced") ? String(name.dropLast(".synced".count)) : name
    }
}

enum CrashReportFinder {
    /// "<process>-2024-01-31-101500.ips", "<process>_2019-…crash", "<process>.ips" (iOS naming over the years).
    static func belongs(_ name: String, to process: String) -> Bool {
        guard !process.isEmpty, name.hasPrefix(process) else { return false }
        let rest = name.dropFirst(process.count)
        guard let separator = rest.first else { return false }
        return separator == "-" || separator == "_" || separator == "."
    }

    static func find(in afc: AFCClient, process: String, newerThan threshold: Date) throws
        -> [CrashReportEntry]
    {
        var found: [CrashReportEntry] = []
        var pending: [(String, Int)] = [(".", 0)]
        var visited = 0
        while let (directory, depth) = pending.popLast() {
            for name in try afc.readDirectory(directory) {
                // A defensive cap: CrashReporter holds hundreds of files at most.
                visited += 1
                guard visited < 20_000 else { return found.sorted { $0.modified < $1.modified } }
                let path = directory == "." ? name : directory + "/" + name
                guard let info = try afc.fileInfo(path) else { continue }
                if info["st_ifmt"] == "S_IFDIR" {
                    if depth < 3 { pending.append((path, depth + 1)) }
                    continue
                }
                guard info["st_ifmt"] == "S_IFREG", belongs(name, to: process) else { continue }
                let nanos = Double(info["st_mtime"] ?? info["st_birthtime"] ?? "0") ?? 0
                let modified = Date(timeIntervalSince1970: nanos / 1e9)
                if modified >= threshold { found.append(CrashReportEntry(path: path, modified: modified)) }
            }
        }
        return found.sorted { $0.modified < $1.modified }
    }

    static func copy(_ path: String, from afc: AFCClient, to target: URL, in fileSystem: any FileSystem)
        throws
    {
        let handle = try afc.open(path, mode: AFC_FOPEN_RDONLY)
        defer { try? afc.close(handle, path: path) }
        _ = fileSystem.createFile(atPath: target.path, contents: nil)
        guard let output = try? FileHandle(forWritingTo: target) else {
            throw MobileDeviceError(
                .hostIO, step: "write \(target.path)", device: afc.identity,
                reason: "the file cannot be created",
                nextStep: "Choose a writable report directory.")
        }
        defer { try? output.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try afc.read(handle, into: buffer, path: path)
            if count == 0 { break }
            output.write(Data(UnsafeRawBufferPointer(rebasing: buffer[0..<count])))
        }
    }
}
