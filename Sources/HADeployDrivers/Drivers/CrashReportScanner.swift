import Foundation
import HADeployCore

/// Finds the app's crash reports in a folder (the Mac's `~/Library/Logs/DiagnosticReports` for
/// simulators, or a folder pulled from a device) and copies the new ones out.
struct CrashReportScanner: Sendable {
    var executable: String
    var since: Date
    /// Keep only reports of this simulator: a simulator crash report names the process path
    /// `…/CoreSimulator/Devices/<UDID>/…`, so two simulators running the same app are told apart.
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
            if let udid = simulatorUDID, text.contains("CoreSimulator/Devices/"), !text.contains(udid) {
                continue
            }
            if excludeSimulators, text.contains("CoreSimulator/Devices/") { continue }
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
