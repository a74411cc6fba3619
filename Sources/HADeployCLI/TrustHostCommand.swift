import ArgumentParser
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import Versioning

struct TrustHostCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust-host",
        abstract: "Show an SSH device's host key and, once you confirm it, trust it.",
        discussion: """
            hadeploy never accepts an unknown SSH host key by itself. Compare the
            fingerprint with the device's own (on the device:
            `ssh-keygen -lf /etc/ssh/ssh_host_rsa_key.pub`), then:
              hadeploy trust-host ipad2                  shows the key, asks on a terminal
              hadeploy trust-host ipad2 --fingerprint SHA256:…     non-interactive (CI)
              hadeploy trust-host ipad2 --fingerprint SHA256:… --replace
                                                         after a known key change
              hadeploy trust-host build-host             the Mac named by build_host:
              hadeploy trust-host ssh://ci@mac-mini      any SSH address (a USB host...)
            Keys go to ~/.config/hadeploy/known_hosts (HADEPLOY_KNOWN_HOSTS overrides).
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(
        help: ArgumentHelp(
            "The SSH device from devices.yaml, `build-host`, or an ssh://[user@]host[:port] address.",
            valueName: "device"))
    var device: String

    @Option(name: .long, help: ArgumentHelp("The SHA256 fingerprint you checked.", valueName: "SHA256:…"))
    var fingerprint: String?

    @Flag(name: .long, help: "Replace a different key stored for this host.")
    var replace = false

    func run(_ context: HADeployContext) async throws {
        let workspace = project.workspace(context)
        let request = try HostTrustRequest(
            target: device, matrix: try workspace.loadMatrix(),
            variables: try workspace.loadVariables().values,
            topology: .current(environment: context.environment), configPath: project.config,
            fileSystem: context.fileSystem)
        let info = try await request.scan()
        context.print(
            "\(request.label) at \(request.connection.address): \(info.keyType) \(info.fingerprint) "
                + "(\(info.status.rawValue))")
        if info.status == .trusted {
            context.print("already trusted in \(request.knownHosts)")
            return
        }
        let trusted = try await request.trust(
            info, fingerprint: fingerprint, replace: replace, context: context)
        context.print("trusted \(trusted.keyType) \(trusted.fingerprint) in \(request.knownHosts)")
    }
}
