import Foundation
import HADeployCore
import SSHTransport
import TestSupport
import Testing

@testable import HADeployBuild
@testable import HADeployDrivers
@testable import HADeployKit

/// How hadeploy logs in to a USB host or a build host: what the user set wins, then the agent (where
/// encrypted keys live), then the usual key files.
struct SSHLoginTests {
    @Test func anExplicitKeyThenTheAgentThenTheUsualKeyFiles() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("hd-login-\(UUID())")
        try FileManager.default.createDirectory(
            at: home.appendingPathComponent(".ssh"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let rsa = home.appendingPathComponent(".ssh/id_rsa").path
        try Data("key".utf8).write(to: URL(fileURLWithPath: rsa))
        var variables = ["HOME": home.path]

        #expect(
            SSHLogin.authentication(
                keyVariable: "BUILD_HOST_SSH_KEY", variables: variables, fileSystem: TestHost.fileSystem)
                == .privateKey(path: rsa, passphrase: nil))
        variables["SSH_AUTH_SOCK"] = "/run/user/1000/agent.sock"
        #expect(
            SSHLogin.authentication(
                keyVariable: "BUILD_HOST_SSH_KEY", variables: variables, fileSystem: TestHost.fileSystem)
                == .agent(socketPath: "/run/user/1000/agent.sock"))
        variables["BUILD_HOST_SSH_KEY"] = "/keys/builder"
        #expect(
            SSHLogin.authentication(
                keyVariable: "BUILD_HOST_SSH_KEY", variables: variables, fileSystem: TestHost.fileSystem)
                == .privateKey(path: "/keys/builder", passphrase: nil))
        // Another host's variable does not apply.
        #expect(
            SSHLogin.authentication(
                keyVariable: "USB_HOST_SSH_KEY", variables: variables, fileSystem: TestHost.fileSystem)
                == .agent(socketPath: "/run/user/1000/agent.sock"))

        #expect(SSHLogin.knownHostsPath(["HOME": "/home/ci"]) == "/home/ci/.config/hadeploy/known_hosts")
        #expect(
            SSHLogin.knownHostsPath(["HOME": "/home/ci", "HADEPLOY_KNOWN_HOSTS": "/etc/kh"]) == "/etc/kh")
    }
}

/// Where a build host's work tree goes, as written in `build_host:`.
struct BuildHostAddressTests {
    func machine(_ address: String, root: String = "/src/My App") throws -> RemoteBuildMachine {
        try RemoteBuildMachine(
            address: address, authentication: .agent(socketPath: nil), knownHostsPath: "/dev/null",
            localRoot: URL(fileURLWithPath: root), runner: FailingRunner(), fileSystem: FakeFileSystem(),
            localUser: "builder")
    }

    @Test func theWorkDirectoryComesFromThePathOrDefaultsToOnePerCheckout() async throws {
        let home = try machine("ssh://ci@mac-mini/~/builds")
        #expect(home.directory == "~/builds")
        #expect(home.directoryWord == "\"$HOME\"/builds")
        #expect(home.config.user == "ci")

        let absolute = try machine("ssh://ci@mac-mini:2222/Users/ci/hadeploy builds")
        #expect(absolute.directory == "/Users/ci/hadeploy builds")
        #expect(absolute.directoryWord == "'/Users/ci/hadeploy builds'")
        #expect(absolute.config.port == 2222)

        let first = try machine("ssh://mac-mini").directory
        #expect(first.hasPrefix(".hadeploy-builds/MyApp-"))
        #expect(try machine("ssh://mac-mini").directory == first, "the same checkout keeps its tree")
        #expect(try machine("ssh://mac-mini", root: "/other/My App").directory != first)
        // No user in the address: the local account's name, as ssh does.
        #expect(try machine("ssh://mac-mini").config.user == "builder")
    }
}
