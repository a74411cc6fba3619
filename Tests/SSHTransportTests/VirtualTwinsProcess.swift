import Foundation
import SSHTestPeers
import TestSupport

/// `hadeploy virtual` as a process of its own: the twins (and the usbmuxd) a real USB host would
/// have, serving the devices of the `devices.yaml` in `project` on a UNIX socket.
///
/// Out of the test process on purpose. The suite runs its tests side by side on Swift's small thread
/// pool (two threads on two cores), and a twin inside it answers only when that pool gets to it;
/// libusbmuxd waits 5 s for each usbmuxd answer, then goes on as if there were no pair record (and
/// tries to pair). A USB host's usbmuxd is another process too.
final class VirtualTwinsProcess: Sendable {
    /// The value for `USBMUXD_SOCKET_ADDRESS`.
    let address: String
    private let command: BackgroundCommand

    init(project: URL, only: [String], socket: URL, state: URL, home: URL) async throws {
        let binary = try await HADeployBinary.path
        command = try BackgroundCommand(
            binary, ["virtual", "--only"] + only + ["--socket", socket.path, "--state", state.path],
            in: project, environment: ["HOME": home.path])
        guard let line = try await command.line(startingWith: "USBMUXD_SOCKET_ADDRESS=", within: 60) else {
            let output = command.output
            command.stop()
            throw TestEnvironment.SetupMissing(description: "hadeploy virtual did not start: \(output)")
        }
        address = String(line.dropFirst("USBMUXD_SOCKET_ADDRESS=".count))
    }

    /// Everything it printed so far (its device lines, warnings).
    var output: String { command.output }

    func stop() { command.stop() }
}
