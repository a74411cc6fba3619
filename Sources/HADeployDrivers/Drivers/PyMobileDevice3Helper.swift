import Foundation
import HADeployCore

/// One pymobiledevice3 process for one device for the run: hadeploy's own Python server
/// (`PyMobileDevice3HelperScript`) run by pymobiledevice3's interpreter, serving the steps over its
/// stdin and stdout (JSON lines) through pymobiledevice3's Python API. It builds the developer tunnel
/// once and reuses it; a tunnel that dropped is rebuilt once per request (the reply says why).
///
/// Every request has the step's deadline: a helper that does not answer in time is stopped, and the
/// next step starts a new one. The helper ends when its stdin closes (`stop`, or hadeploy ending
/// however it ends) or its parent goes.
final class PyMobileDevice3Helper: @unchecked Sendable {
    /// What the helper says once it is up.
    struct Hello: Sendable, Hashable {
        var version: String
        var python: String
        var processID: Int32
    }

    /// A reply that is not a success: the helper's own words.
    struct Refusal: Error, Sendable {
        var reason: String
        var timedOut: Bool
        /// This pymobiledevice3 lacks the API the request needs.
        var unsupported: Bool
        var rebuilt: String?
    }

    /// The helper did not answer in time, exited, or said something that is not a reply.
    struct Broken: Error, Sendable {
        var reason: String
        /// It said nothing within the deadline.
        var timedOut = false
    }

    struct Reply: @unchecked Sendable {
        var result: [String: Any]
        /// Why the tunnel (or the lockdown connection) was rebuilt for this request, if it was.
        var rebuilt: String?
        /// How many tunnels this helper has built so far.
        var tunnels: Int
    }

    let session: any ProcessSession
    let hello: Hello
    private var nextID = 0
    private let lock = NSLock()

    private init(session: any ProcessSession, hello: Hello) {
        self.session = session
        self.hello = hello
    }

    /// The bootstrap on the command line: it reads the server's source (one JSON string) from the
    /// first line of stdin and runs it; the rest of stdin is the server's requests.
    /// The collector is off while pymobiledevice3's modules load (a fifth faster; the server turns it
    /// back on once they have).
    static let bootstrap =
        "import gc,sys,json;gc.disable();"
        + "exec(compile(json.loads(sys.stdin.buffer.readline()),'hadeploy-pymobiledevice3-helper','exec'))"

    /// The helper's command: `interpreter -c BOOTSTRAP`, the server's source as its first stdin line.
    static func command(interpreter: [String], udid: String, environment: [String: String]) -> ProcessCommand
    {
        var environment = environment
        environment["HADEPLOY_UDID"] = udid
        // Python's own output unbuffered and in UTF-8 whatever the locale.
        environment["PYTHONUNBUFFERED"] = "1"
        environment["PYTHONIOENCODING"] = "utf-8"
        let source =
            (try? JSONSerialization.data(
                withJSONObject: PyMobileDevice3HelperScript.source, options: [.fragmentsAllowed])) ?? Data()
        return ProcessCommand(
            interpreter[0], Array(interpreter.dropFirst()) + ["-c", bootstrap], environment: environment,
            standardInput: source + Data("\n".utf8))
    }

    /// Starts the helper and waits for its hello (imports done, pymobiledevice3's API there).
    /// Throws `Broken` with the reason when it cannot start or is not usable.
    static func start(_ command: ProcessCommand, runner: any ProcessRunner, timeout: Duration) async throws
        -> PyMobileDevice3Helper
    {
        let session: any ProcessSession
        do {
            session = try runner.session(command)
        } catch let error as ProcessError {
            switch error {
            case .notFound: throw Broken(reason: "\(command.executable) was not found")
            default: throw Broken(reason: "\(error)")
            }
        }
        func fail(_ reason: String) async -> Broken {
            await session.stop(grace: .zero)
            let said = ToolInvoker.lastLines(session.standardErrorTail(), count: 2)
            return Broken(reason: reason + (said.isEmpty ? "" : " (\(said))"))
        }
        let line: String?
        do {
            line = try await session.nextLine(timeout: timeout)
        } catch is ProcessSessionTimeout {
            throw await fail("it did not start within \(timeout.formattedSeconds)")
        } catch {
            await session.stop(grace: .zero)
            throw error
        }
        guard let line else { throw await fail("it exited before it was ready") }
        guard let object = Self.object(line) else { throw await fail("it did not say hello") }
        guard object["ready"] as? Bool == true else {
            let reason = object["error"] as? String ?? "not ready"
            throw await fail("pymobiledevice3's API is not there: \(reason)")
        }
        let hello = Hello(
            version: object["version"] as? String ?? "", python: object["python"] as? String ?? "",
            processID: Int32(object["pid"] as? Int ?? Int(session.processIdentifier)))
        return PyMobileDevice3Helper(session: session, hello: hello)
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Sends `operation` with `arguments` (a JSON object) and waits at most `deadline` for its reply.
    /// The helper is told the deadline less a margin, so it answers a device that hangs with its own
    /// words first.
    func request(_ operation: String, arguments: Data, deadline: Duration) async throws -> Reply {
        let id = lock.withLock {
            nextID += 1
            return nextID
        }
        let header: [String: Any] = [
            "id": id, "op": operation, "deadline": max(1, deadline.seconds - Self.margin(deadline).seconds),
        ]
        // `{"args": ARGUMENTS, "deadline": …, "id": …, "op": …}`: the arguments as they were encoded.
        var line = Data(#"{"args":"#.utf8) + arguments + Data(",".utf8)
        line += try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]).dropFirst()
        line.append(0x0A)
        do {
            try session.send(line)
        } catch {
            throw Broken(reason: "had its input closed (it exited)\(stderrSaid())")
        }
        let answer: String?
        do {
            answer = try await session.nextLine(timeout: deadline)
        } catch is ProcessSessionTimeout {
            throw Broken(reason: "did not answer within \(deadline.formattedSeconds)", timedOut: true)
        }
        guard let answer else { throw Broken(reason: "exited\(stderrSaid())") }
        // Requests go one at a time and a helper given up on is stopped: the line is this reply.
        guard let object = Self.object(answer), object["id"] as? Int == id else {
            throw Broken(reason: "answered something that is not the reply to request \(id)")
        }
        let rebuilt = object["rebuilt"] as? String
        guard object["ok"] as? Bool == true else {
            throw Refusal(
                reason: object["error"] as? String ?? "it failed without a reason",
                timedOut: object["timedOut"] as? Bool ?? false,
                unsupported: object["unsupported"] as? Bool ?? false, rebuilt: rebuilt)
        }
        return Reply(
            result: object["result"] as? [String: Any] ?? [:], rebuilt: rebuilt,
            tunnels: object["tunnels"] as? Int ?? 0)
    }

    /// The time the helper keeps for answering that it gave up: a tenth of the deadline, 0.5–2 s.
    static func margin(_ deadline: Duration) -> Duration {
        .checkedSeconds(min(2, max(0.5, deadline.seconds / 10)))
    }

    private func stderrSaid() -> String {
        let said = ToolInvoker.lastLines(session.standardErrorTail(), count: 2)
        return said.isEmpty ? "" : " (\(said))"
    }

    /// Closes its stdin (the helper closes the tunnel and exits), then ends it by signal if need be.
    func stop(grace: Duration = .seconds(3)) async {
        await session.stop(grace: grace)
    }
}
