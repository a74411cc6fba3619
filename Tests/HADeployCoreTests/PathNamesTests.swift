import Foundation
import HADeployCore
import Testing

/// Device ids and flavour names become folder and file names: one rule, and a component that is safe
/// even for a name that never passed it.
@Suite struct PathNamesTests {
    @Test(arguments: ["ipad2", "sim-ios93", "iPad_2.kitchen-1", "a", String(repeating: "x", count: 64)])
    func plainNamesPassUnchanged(_ name: String) {
        #expect(PathNames.problem(name, what: "device name") == nil)
        #expect(PathNames.component(name) == name)
    }

    @Test(arguments: [
        "", ".", "..", "../../x", "a/b", "/etc", "-rf", ".hidden", "x\u{0}", "tab\there", "kü", "a b",
        String(repeating: "x", count: 65), String(repeating: "../", count: 40),
    ])
    func anythingElseIsRefusedAndStillGetsASafeComponent(_ name: String) {
        #expect(PathNames.problem(name, what: "device name") != nil, "\(name.debugDescription)")
        let component = PathNames.component(name)
        #expect(PathNames.problem(component, what: "component") == nil, "\(component.debugDescription)")
        // Appended to a folder, it stays a child of that folder.
        let base = URL(fileURLWithPath: "/state/jailbreak")
        #expect(
            base.appendingPathComponent(component).standardized.deletingLastPathComponent().path == base.path)
    }

    @Test func twoBadNamesNeverShareAFolder() {
        #expect(PathNames.component("a/b") != PathNames.component("a_b"))
        #expect(PathNames.component("a/b") != PathNames.component("a:b"))
        #expect(PathNames.component("../x") != PathNames.component("./x"))
    }
}
