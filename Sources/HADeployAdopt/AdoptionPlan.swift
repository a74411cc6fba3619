import Foundation

/// What `hadeploy init` will do in an app repository, computed before anything is written: each
/// file with its whole new content, and what the user still has to fill in.
public struct AdoptionPlan: Sendable, Encodable {
    public enum Action: String, Sendable, Encodable {
        /// The file does not exist yet.
        case create
        /// The file exists with other content; only written with `--force`.
        case replace
        /// The file exists; lines are added at its end, nothing of it is changed.
        case append
        /// The file already has exactly this content.
        case unchanged
    }

    public struct PlannedFile: Sendable, Encodable {
        /// Relative to the repository root.
        public var path: String
        public var contents: String
        public var action: Action
        /// One line for the user: what the file is and where it came from.
        public var summary: String
    }

    public var files: [PlannedFile]
    /// Keys of `.env` the matrix or the templates need that neither `.env` nor the environment has.
    public var unsetKeys: [String]
    /// `.env` lines for devices this host can see now (`IPAD_MINI4_UDID=...  # iPad mini 4 on USB`).
    public var suggestions: [String]
    /// Anything else worth knowing (a missing configuration, a device source not listed).
    public var notes: [String]

    /// The files `--force` would be needed for.
    public var conflicts: [String] { files.filter { $0.action == .replace }.map(\.path) }
}
