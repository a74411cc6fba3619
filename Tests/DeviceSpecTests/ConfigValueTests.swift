import DeviceSpec
import Testing

@Suite struct ConfigValueTests {
    @Test func resolvesVariablesAndDefaults() {
        let value = ConfigValue("${USER_NAME}@${HOST:-ipad.local}:${PORT:-}")
        #expect(value.references == ["USER_NAME", "HOST", "PORT"])
        #expect(value.resolve(["USER_NAME": "root"]) == .value("root@ipad.local:"))
        #expect(
            value.resolve(["USER_NAME": "root", "HOST": "10.0.0.2", "PORT": "22"])
                == .value("root@10.0.0.2:22"))
        #expect(value.resolve([:]) == .unset(["USER_NAME"]))
        // An empty value (as `.env.example` leaves them) counts as unset.
        #expect(value.resolve(["USER_NAME": ""]) == .unset(["USER_NAME"]))
        #expect(value.display([:]) == "<unset: USER_NAME>")
        #expect(ConfigValue("${A}-${B}").display([:]) == "<unset: A, B>")
        #expect(ConfigValue("plain text").display([:]) == "plain text")
        #expect(
            ConfigValue("~/Library/${DIR:-iOS DeviceSupport}").display([:]) == "~/Library/iOS DeviceSupport")
    }
}
