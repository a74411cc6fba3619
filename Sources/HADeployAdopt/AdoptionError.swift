import HADeployCore

/// Why `hadeploy init` stopped before writing anything.
public enum AdoptionError: Error, Equatable, CustomStringConvertible, ExitStatusProviding {
    case noProjectSpec(directory: String)
    case wouldOverwrite([String])
    case mustacheInSpec(line: Int)

    public var description: String {
        switch self {
        case .noProjectSpec(let directory):
            return "no XcodeGen project.yml in \(directory); run `hadeploy init` in the app repository's root"
        case .wouldOverwrite(let paths):
            return "\(paths.joined(separator: ", ")) already exist\(paths.count == 1 ? "s" : "") with other "
                + "content; nothing was written. Rerun with --force to replace "
                + (paths.count == 1 ? "it" : "them") + " (see `hadeploy init --dry-run` for the new content)"
        case .mustacheInSpec(let line):
            return "project.yml:\(line) already contains `{{`, which the template would read as a "
                + "Mustache tag; write Templates/project.yml.mustache by hand"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .noProjectSpec, .mustacheInSpec: return .config
        case .wouldOverwrite: return .usage
        }
    }
}
