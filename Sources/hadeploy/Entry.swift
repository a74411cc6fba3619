import Foundation
import HADeployCLI
import HADeployCore
import Logging

@main
enum Entry {
    static func main() async {
        // A parent may hand down blocked signals (Foundation's Process started from a Swift
        // concurrency thread does): Ctrl-C must always reach the clean-stop handler.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        sigprocmask(SIG_UNBLOCK, &signals, nil)
        // A peer that closes a socket or pipe mid-write (a device, an SSH server, a tool's stdin) gives
        // EPIPE to the one write, never a SIGPIPE that ends the whole run for every device.
        signal(SIGPIPE, SIG_IGN)
        // macOS starts a process with 256 descriptors: a fan-out to many devices needs more.
        ProcessSetup.raiseOpenFileLimit()
        // Library logs go to stderr (stdout is for results and JSON Lines), warnings and up unless
        // HADEPLOY_DEBUG is set.
        let debug = HADeployContext.live().environment["HADEPLOY_DEBUG"] != nil
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = debug ? .debug : .warning
            return RedactingLogHandler(handler)
        }
        await HADeploy.main()
    }
}
