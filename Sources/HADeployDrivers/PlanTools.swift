import DeployModel
import Foundation
import HADeployCore

/// How a tool the plan names (`DeployPlan.fileTools`) becomes the executable a run starts: the one
/// rule both the planner's output and a plan file go through, at run time, on the host that runs it.
public enum PlanTools {
    /// The executable for `name`, from the run's `environment` (`.env` included for a plan made in the
    /// same run; the environment alone for a plan file) and its working folder:
    /// - `pymobiledevice3`: `PYMOBILEDEVICE3`, else `<working folder>/.venv-pmd3/bin/pymobiledevice3`
    ///   when it is executable, else `pymobiledevice3` on PATH;
    /// - `rosettasim-ctl`: `ROSETTASIM_CTL` (`~` expanded), else `rosettasim-ctl` on PATH.
    /// Any other name is returned as it is (a plan file names no other: `DeployPlan.fileProblems`).
    public static func resolve(
        _ name: String, environment: [String: String], workingDirectory: URL, fileSystem: any FileSystem
    ) -> String {
        switch name {
        case "pymobiledevice3":
            return PyMobileDevice3Driver.executable(
                variables: environment, checkout: workingDirectory, fileSystem: fileSystem)
        case "rosettasim-ctl":
            if let named = environment["ROSETTASIM_CTL"], !named.isEmpty {
                return HomePath.expand(named, environment)
            }
            return name
        default:
            return name
        }
    }
}
