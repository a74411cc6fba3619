/// The built-in apps an iPad lists with `ApplicationType: System`, per iOS release: what
/// `ideviceinstaller -l -o list_system` and `pymobiledevice3 apps list` show on a real device.
struct SystemAppCatalog {
    struct Entry {
        let bundleIdentifier: String
        let name: String
        let executable: String
        /// First and last major iOS release that ships it on iPad.
        let since: Int
        let until: Int

        init(
            _ bundleIdentifier: String, _ name: String, _ executable: String, since: Int = 9, until: Int = 99
        ) {
            self.bundleIdentifier = bundleIdentifier
            self.name = name
            self.executable = executable
            self.since = since
            self.until = until
        }
    }

    static let all: [Entry] = [
        Entry("com.apple.mobilesafari", "Safari", "MobileSafari"),
        Entry("com.apple.Preferences", "Settings", "Preferences"),
        Entry("com.apple.camera", "Camera", "Camera"),
        Entry("com.apple.mobileslideshow", "Photos", "MobileSlideShow"),
        Entry("com.apple.mobilemail", "Mail", "MobileMail"),
        Entry("com.apple.mobilecal", "Calendar", "MobileCal"),
        Entry("com.apple.MobileAddressBook", "Contacts", "Contacts"),
        Entry("com.apple.mobilenotes", "Notes", "MobileNotes"),
        Entry("com.apple.reminders", "Reminders", "Reminders"),
        Entry("com.apple.Maps", "Maps", "Maps"),
        Entry("com.apple.facetime", "FaceTime", "FaceTime"),
        Entry("com.apple.MobileSMS", "Messages", "MobileSMS"),
        Entry("com.apple.AppStore", "App Store", "AppStore"),
        Entry("com.apple.MobileStore", "iTunes Store", "MobileStore"),
        Entry("com.apple.iBooks", "iBooks", "iBooks", until: 11),
        Entry("com.apple.iBooks", "Books", "Books", since: 12),
        Entry("com.apple.Music", "Music", "Music"),
        Entry("com.apple.tv", "TV", "TVWatchList", since: 10),
        Entry("com.apple.videos", "Videos", "Videos", until: 9),
        Entry("com.apple.podcasts", "Podcasts", "Podcasts"),
        Entry("com.apple.gamecenter", "Game Center", "Game Center", until: 9),
        Entry("com.apple.news", "News", "News"),
        Entry("com.apple.mobiletimer", "Clock", "MobileTimer"),
        Entry("com.apple.mobileme.fmip1", "Find iPhone", "FindMyiPhone", until: 12),
        Entry("com.apple.findmy", "Find My", "FindMy", since: 13),
        Entry("com.apple.Photo-Booth", "Photo Booth", "Photo Booth"),
        Entry("com.apple.tips", "Tips", "Tips"),
        Entry("com.apple.Home", "Home", "Home", since: 10),
        Entry("com.apple.DocumentsApp", "Files", "Files", since: 11),
        Entry("com.apple.shortcuts", "Shortcuts", "Shortcuts", since: 13),
        Entry("com.apple.measure", "Measure", "Measure", since: 12),
        Entry("com.apple.VoiceMemos", "Voice Memos", "VoiceMemos", since: 12),
        Entry("com.apple.weather", "Weather", "Weather", since: 15),
        Entry("com.apple.Translate", "Translate", "Translate", since: 15),
        Entry("com.apple.Magnifier", "Magnifier", "Magnifier", since: 14),
        Entry("com.apple.stocks", "Stocks", "Stocks", since: 12),
        Entry("com.apple.iCloudDriveApp", "iCloud Drive", "iCloud Drive", since: 9, until: 10),
    ]

    /// The entries a device running iOS `major` lists.
    static func entries(major: Int) -> [Entry] {
        all.filter { $0.since <= major && major <= $0.until }
    }
}
