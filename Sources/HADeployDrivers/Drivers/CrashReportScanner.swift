import Foundation
import HADeployCore

/// Finds the app's crash reports in a folder (the Mac's `~/Library/Logs/DiagnosticReports` for
/// simulators, or a folder pulled from a device) and copies the new ones out.
struct CrashReportScanner: Sendable {
    var executable: String
    var since: Date
    /// Keep only reports of this simulator: a simulator crash report names the process path
    /// `…/CoreSimulator/Devices/<UDID>/…`, so two simulators running the same app are told apart,
    /// and the Mac app's own crashes (no such path) are not a simulator's.
    var simulatorUDID: String?
    /// Skip every simulator's reports (the Mac app shares the folder and the executable name).
    var excludeSimulators = false
    var fileSystem: any FileSystem

    /// The matching reports in `folder`, oldest first.
    func matches(in folder: URL) -> [URL] {
        let files = ((try? fileSystem.contentsOfDirectory(atPath: folder.path)) ?? []).map {
            folder.appendingPathComponent($0)
        }
        var found: [(Date, URL)] = []
        for file in files where ["ips", "crash"].contains(file.pathExtension) {
            let name = file.deletingPathExtension().lastPathComponent
            guard name.hasPrefix(executable + "-") || name.hasPrefix(executable + "_") || name == executable
            else { continue }
            guard let data = fileSystem.contents(atPath: file.path) else { continue }
            let text = String(decoding: data, as: UTF8.self)
            let header = Self.header(text)
            if let process = header?["name"] as? String ?? header?["app_name"] as? String,
                process != executable
            {
                continue
            }
            let modified = (try? fileSystem.attributesOfItem(atPath: file.path))?[.modificationDate] as? Date
            guard let date = (header?["timestamp"] as? String).flatMap(Self.timestamp) ?? modified,
                date >= since
            else { continue }
            // Where the crashed process ran from: a simulator's app is under its device folder.
            let location = Self.processPath(text) ?? text.replacingOccurrences(of: "\\/", with: "/")
            if let udid = simulatorUDID, !location.contains(Self.simulatorDevices + udid + "/") { continue }
            if excludeSimulators, location.contains(Self.simulatorDevices) { continue }
            found.append((date, file))
        }
        return found.sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// Copies the matches into `directory` (created if needed) and returns the copies.
    func copyMatches(from folder: URL, into directory: URL) throws -> [URL] {
        let matches = matches(in: folder)
        guard !matches.isEmpty else { return [] }
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        return try matches.map { source in
            let target = directory.appendingPathComponent(source.lastPathComponent)
            if fileSystem.fileExists(atPath: target.path) { try fileSystem.removeItem(at: target) }
            try fileSystem.copyItem(at: source, to: target)
            return target
        }
    }

    /// The first line of an `.ips` report is a JSON object (`app_name`, `name`, `timestamp`, `bug_type`...).
    static func header(_ text: String) -> [String: Any]? {
        guard let line = text.split(separator: "\n", maxSplits: 1).first, line.hasPrefix("{") else {
            return nil
        }
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Where a simulator's processes run from: `…/CoreSimulator/Devices/<UDID>/data/…`.
    static let simulatorDevices = "/CoreSimulator/Devices/"

    /// The crashed process's executable path: `procPath` in the JSON object after an `.ips`
    /// report's header line (decoded: the file writes every `/` as `\/`), or the `Path:` line of a
    /// `.crash` report; nil when the report has neither.
    static func processPath(_ text: String) -> String? {
        let parts = text.split(separator: "\n", maxSplits: 1)
        if parts.count == 2, parts[1].drop(while: \.isWhitespace).hasPrefix("{"),
            let body = try? JSONSerialization.jsonObject(with: Data(parts[1].utf8)) as? [String: Any],
            let path = body["procPath"] as? String
        {
            return path
        }
        for line in text.split(separator: "\n") where line.hasPrefix("Path:") {
            return line.dropFirst("Path:".count).trimmingCharacters(in: .whitespaces)
        }
        return nil
    }

    /// `2024-06-11 10:15:02.00 +0200`, as `.ips` headers write it.
    static func timestamp(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        for format in ["yyyy-MM-dd HH:mm:ss.SS Z", "yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd HH:mm:ss.SSSS Z"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
