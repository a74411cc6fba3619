import ArgumentParser
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import SSHTransport
import Versioning

struct TrustHostCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust-host",
        abstract: "Show an SSH device's host key and, once you confirm it, trust it.",
        discussion: """
            hadeploy never accepts an unknown SSH host key by itself. Compare the fingerprint with the
            device's own (on the device: `ssh-keygen -lf /etc/ssh/ssh_host_rsa_key.pub`), then:
              hadeploy trust-host ipad2                          shows the key, asks on a terminal
              hadeploy trust-host ipad2 --fingerprint SHA256:…   non-interactive (CI)
              hadeploy trust-host ipad2 --fingerprint SHA256:… --replace   after a known key change
              hadeploy trust-host build-host                     the Mac named by build_host:
              hadeploy trust-host ssh://ci@mac-mini              any SSH address (a USB host, a builder)
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

    func run() async throws {
        try await withContext { context in
            let workspace = Workspace(
                context: context, configPath: project.config, envFilePath: project.envFile)
            let matrix = try workspace.loadMatrix()
            let (variables, _) = try workspace.loadVariables()
            let knownHosts = SSHLogin.knownHostsPath(variables)
            let connection: SSHConnectionConfig
            let label: String
            if device.hasPrefix("ssh://") || device == "build_host" || device == "build-host" {
                // The remote builder (or a USB host): an address rather than a device.
                var address = device
                if !device.hasPrefix("ssh://") {
                    guard let value = matrix.buildHost?.display(variables) else {
                        throw ValidationError("\(project.config) has no build_host")
                    }
                    address = value
                }
                var parsed = try SSHConnectionConfig.parse(
                    url: address, authentication: .agent(socketPath: nil), name: address)
                parsed.knownHostsPath = knownHosts
                connection = parsed
                label = address
            } else {
                guard let target = try TargetResolver(matrix: matrix).resolve([device]).first,
                    target.ssh != nil || target.transport == .ssh
                else { throw ValidationError("\(device) is not reached over SSH in \(project.config)") }
                let version = GitVersion.unversioned
                let plan = try DeployPlanner(
                    matrix: matrix, variables: variables, topology: .current(environment: context.environment)
                )
                .plan(
                    options: DeployOptions(targets: [device], verify: false), version: version,
                    deployID: "trust")
                guard let devicePlan = plan.devices.first else { throw ValidationError("no such device") }
                connection = try SSHDriver.config(
                    for: target, plan: devicePlan, variables: variables, knownHosts: knownHosts
                ).connection
                label = target.name
            }
            let config = connection
            let info = try await HostKeyTrust.scan(config)
            context.print(
                "\(label) at \(config.address): \(info.keyType) \(info.fingerprint) (\(info.status.rawValue))"
            )
            if info.status == .trusted {
                context.print("already trusted in \(knownHosts)")
                return
            }
            var confirmed = fingerprint
            if confirmed == nil {
                guard isatty(STDIN_FILENO) == 1 else {
                    throw ValidationError(
                        "not a terminal: pass --fingerprint \(info.fingerprint) after checking it on the device"
                    )
                }
                context.message("Trust this key? Type the fingerprint's last 6 characters to confirm: ")
                let answer = readLine()?.trimmingCharacters(in: .whitespaces) ?? ""
                guard !answer.isEmpty, info.fingerprint.hasSuffix(answer), answer.count >= 6 else {
                    throw ValidationError("not confirmed; nothing was written")
                }
                confirmed = info.fingerprint
            }
            let trusted = try await HostKeyTrust.trust(
                config, expectedFingerprint: confirmed!, replace: replace)
            context.print("trusted \(trusted.keyType) \(trusted.fingerprint) in \(knownHosts)")
        }
    }
}
