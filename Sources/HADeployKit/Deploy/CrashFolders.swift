import Foundation
import HADeployCore

/// Where a run without `--report` keeps the crash reports it pulls: `<state>/crashes/<run id>/<device>`,
/// in the project's own state folder (owner-only), so no other user can have prepared the path; a run
/// that found none leaves no folder, and only the newest ``kept`` runs' folders stay.
struct CrashFolders: Sendable {
    /// How many runs' crash reports are kept.
    static let kept = 10

    var root: URL
    var fileSystem: any FileSystem

    /// Makes the run's folder (and `root`) private to this user; what was at the path is not followed.
    func prepare(runID: String) throws -> URL {
        try fileSystem.createPrivateDirectory(at: root)
        let folder = root.appendingPathComponent(PathNames.component(runID))
        try fileSystem.createPrivateDirectory(at: folder)
        return folder
    }

    /// Removes the run's folder when nothing was kept in it, and the oldest runs' folders beyond ``kept``.
    func tidy(runID: String) {
        let folder = root.appendingPathComponent(PathNames.component(runID))
        let devices = (try? fileSystem.contentsOfDirectory(atPath: folder.path)) ?? []
        let empty = devices.allSatisfy { device in
            ((try? fileSystem.contentsOfDirectory(atPath: folder.appendingPathComponent(device).path)) ?? [])
                .isEmpty
        }
        if empty { try? fileSystem.removeItem(at: folder) }
        let runs = ((try? fileSystem.contentsOfDirectory(atPath: root.path)) ?? []).compactMap {
            name -> (String, Date)? in
            let attributes = try? fileSystem.attributesOfItem(atPath: root.appendingPathComponent(name).path)
            guard attributes?[.type] as? FileAttributeType == .typeDirectory else { return nil }
            return (name, attributes?[.modificationDate] as? Date ?? .distantPast)
        }
        for (name, _) in runs.sorted(by: { $0.1 > $1.1 }).dropFirst(Self.kept) {
            try? fileSystem.removeItem(at: root.appendingPathComponent(name))
        }
    }
}
