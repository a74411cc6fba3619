import Foundation
import SSHTransport
import Testing

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
            SSHLogin.authentication(keyVariable: "BUILD_HOST_SSH_KEY", variables: variables)
                == .privateKey(path: rsa, passphrase: nil))
        variables["SSH_AUTH_SOCK"] = "/run/user/1000/agent.sock"
        #expect(
            SSHLogin.authentication(keyVariable: "BUILD_HOST_SSH_KEY", variables: variables)
                == .agent(socketPath: "/run/user/1000/agent.sock"))
        variables["BUILD_HOST_SSH_KEY"] = "/keys/builder"
        #expect(
            SSHLogin.authentication(keyVariable: "BUILD_HOST_SSH_KEY", variables: variables)
                == .privateKey(path: "/keys/builder", passphrase: nil))
        // Another host's variable does not apply.
        #expect(
            SSHLogin.authentication(keyVariable: "USB_HOST_SSH_KEY", variables: variables)
                == .agent(socketPath: "/run/user/1000/agent.sock"))

        #expect(SSHLogin.knownHostsPath(["HOME": "/home/ci"]) == "/home/ci/.config/hadeploy/known_hosts")
        #expect(
            SSHLogin.knownHostsPath(["HOME": "/home/ci", "HADEPLOY_KNOWN_HOSTS": "/etc/kh"]) == "/etc/kh")
    }
}
