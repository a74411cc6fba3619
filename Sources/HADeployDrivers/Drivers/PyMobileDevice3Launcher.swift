import Foundation
import HADeployCore

/// pymobiledevice3's console script and the Python that runs it. Launches run the script through
/// that interpreter with the argument list on stdin, so no secret is ever in a process's arguments.
public struct PyMobileDevice3Launcher: Sendable, Hashable {
    /// The interpreter's argv prefix: `["/venv/bin/python"]` or `["/usr/bin/env", "python3"]`.
    public var interpreter: [String]
    public var script: String

    public init(interpreter: [String], script: String) {
        self.interpreter = interpreter
        self.script = script
    }

    struct Problem: Error {
        var reason: String
    }

    /// The first line is in: stop reading.
    private struct HeadRead: Error {}

    /// Finds `executable` (a path, or a name on PATH, as `runner` starts it) and reads its `#!` line.
    /// A binary or a script for another interpreter cannot take its arguments from stdin, so it is
    /// refused.
    static func locate(_ executable: String, runner: any ProcessRunner, fileSystem: any FileSystem) throws
        -> PyMobileDevice3Launcher
    {
        guard let path = runner.locate(executable) else {
            throw Problem(reason: "\(executable) was not found on PATH")
        }
        var head = Data()
        do {
            try fileSystem.read(atPath: path, chunkSize: 512) { chunk in
                head.append(chunk)
                if head.count >= 512 { throw HeadRead() }
            }
        } catch is HeadRead {
        } catch {
            throw Problem(reason: "\(path) cannot be read")
        }
        head = head.prefix(512)
        let firstLine = String(decoding: head.prefix { $0 != 0x0A }, as: UTF8.self)
        guard firstLine.hasPrefix("#!") else {
            throw Problem(reason: "\(path) is not a Python console script (no #! line)")
        }
        let words = firstLine.dropFirst(2).split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard words.contains(where: { ($0 as NSString).lastPathComponent.hasPrefix("python") }) else {
            throw Problem(reason: "\(path) is not run by Python (#!\(firstLine.dropFirst(2)))")
        }
        return PyMobileDevice3Launcher(interpreter: words, script: path)
    }
}
