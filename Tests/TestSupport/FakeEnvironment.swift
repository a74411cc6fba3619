import Foundation
import HADeployCore
import Testing

/// A fail-by-default `SystemEnvironment` for tests, from a dictionary of variables: the process id,
/// host and user name fail the test unless they were given.
public struct FakeEnvironment: SystemEnvironment {
    public var variables: [String: String]
    private let pid: Int32?
    private let host: String?
    private let user: String?
    private let uid: UInt32?
    private let executable: String??

    public init(
        _ variables: [String: String] = [:], processIdentifier: Int32? = nil, hostName: String? = nil,
        userName: String? = nil, effectiveUserID: UInt32? = nil, executablePath: String?? = nil
    ) {
        self.variables = variables
        pid = processIdentifier
        host = hostName
        user = userName
        uid = effectiveUserID
        executable = executablePath
    }

    public var effectiveUserID: UInt32 {
        guard let uid else {
            Issue.record("FakeEnvironment: unexpected effectiveUserID (none was given)")
            return 0
        }
        return uid
    }

    public var executablePath: String? {
        guard let executable else {
            Issue.record("FakeEnvironment: unexpected executablePath (none was given)")
            return nil
        }
        return executable
    }

    public var processIdentifier: Int32 {
        guard let pid else {
            Issue.record("FakeEnvironment: unexpected processIdentifier (none was given)")
            return 0
        }
        return pid
    }

    public var hostName: String {
        guard let host else {
            Issue.record("FakeEnvironment: unexpected hostName (none was given)")
            return ""
        }
        return host
    }

    public var userName: String {
        guard let user else {
            Issue.record("FakeEnvironment: unexpected userName (none was given)")
            return ""
        }
        return user
    }
}

extension HADeployContext {
    /// A context made of fail-by-default fakes: files only under `fileSystem`'s root (the working
    /// directory is its `work` folder), a clock that must be given a time, no command, no input.
    public static func fake(
        fileSystem: FakeFileSystem, clock: FakeClock = FakeClock(),
        environment: FakeEnvironment = FakeEnvironment(),
        runner: any ProcessRunner = FailingRunner(), output: any OutputSink = RecordingOutputSink()
    ) -> HADeployContext {
        var variables = environment.variables
        variables["HOME"] = variables["HOME"] ?? fileSystem.homeDirectory.path
        return HADeployContext(
            environment: variables, runner: runner, output: output,
            currentDirectory: fileSystem.currentDirectory,
            fileSystem: fileSystem, clock: clock, system: environment)
    }
}
