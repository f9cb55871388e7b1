import Foundation
import Testing
import WorkoutSensors
import WorkoutTestSupport

@testable import WorkoutCLI

/// The progress line of long commands: erased before each redraw, within 80 columns, only on a terminal.
@Suite("workout: the progress line")
struct ProgressLineTests {
    /// What a terminal shows after `bytes`: carriage return, line feed, erase to end of line (ESC [K)
    /// and printable characters (other escapes are not expected).
    static func screen(_ bytes: String) -> [String] {
        var lines: [[Character]] = [[]]
        var column = 0
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let character = bytes[index]
            if character == "\u{1B}", bytes[index...].hasPrefix("\u{1B}[K") {
                lines[lines.count - 1].removeSubrange(min(column, lines[lines.count - 1].count)...)
                index = bytes.index(index, offsetBy: 3)
                continue
            }
            switch character {
            case "\r": column = 0
            case "\n":
                lines.append([])
                column = 0
            case "\r\n":
                lines.append([])
                column = 0
            default:
                if column < lines[lines.count - 1].count {
                    lines[lines.count - 1][column] = character
                } else {
                    lines[lines.count - 1].append(character)
                }
                column += 1
            }
            index = bytes.index(after: index)
        }
        return lines.map { String($0) }
    }

    @Test func aShorterProgressLineLeavesNothingOfTheLongerOneBehind() {
        // The issue: `leg 3 cyclingion` after `leg 2 transition`.
        let longer = Format.progressLine("[====      ] 1:02:00 / 9:09:47  leg 2 transition")
        let shorter = Format.progressLine("[====      ] 1:07:00 / 9:09:47  leg 3 cycling")
        #expect(Self.screen(longer + shorter) == ["[====      ] 1:07:00 / 9:09:47  leg 3 cycling"])
        // Without the erase, the terminal would have kept the tail (the emulation can fail).
        #expect(Self.screen("\r" + "leg 2 transition" + "\r" + "leg 3 cycling") == ["leg 3 cyclingion"])
    }

    @Test func aProgressLineFitsAnEightyColumnTerminalSoItCannotWrap() {
        // A folder import of 120 files with long names: wrapped, the erase would clear only the last row.
        let name = "2026-05-09-morning-ride-with-the-club-garmin-edge-1040.fit"
        let drawn = Format.progressLine("[=====                         ]  12/120  " + name)
        let screen = Self.screen(drawn + drawn)
        #expect(screen.count == 1)
        #expect(screen[0].count <= 79, "\(screen[0].count) columns: \(screen[0])")
        #expect(screen[0].hasPrefix("[=====                         ]  12/120  2026-05-09-morning-ride"))
    }

    @Test func progressIsNotDrawnWhenStandardErrorIsNotATerminal() throws {
        let folder = try temporaryFolder("workout-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try runCommand(["replay", "pool-swim", "--db", folder.appendingPathComponent("s.sqlite").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("\r") && !result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
        #expect(!result.stdout.contains("\r") && !result.stdout.contains("\u{1B}"))
    }

    @Test func progressOnATerminalErasesEachLineBeforeDrawing() throws {
        let folder = try temporaryFolder("workout-cli")
        defer { try? FileManager.default.removeItem(at: folder) }
        let terminal = try PseudoTerminal()
        let slave = try #require(FileHandle(forWritingAtPath: terminal.path))
        let output = folder.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let stdout = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = BuiltProducts.executable("workout")
        process.arguments = ["replay", "pool-swim", "--db", folder.appendingPathComponent("s.sqlite").path]
        process.standardError = slave
        process.standardOutput = stdout
        try process.run()
        try slave.close()
        var bytes: [UInt8] = []
        let started = Date()
        while true {
            let chunk = try terminal.read(timeout: .milliseconds(100))
            bytes += chunk
            if chunk.isEmpty, !process.isRunning { break }
            if Date().timeIntervalSince(started) > 300 {
                process.terminate()
                Issue.record("replay did not finish within 300 s")
                break
            }
        }
        process.waitUntilExit()
        try stdout.close()
        #expect(process.terminationStatus == 0)
        let drawn = String(decoding: bytes, as: UTF8.self)
        // Progress went to the terminal (standard error), each line erased before it is drawn …
        #expect(drawn.components(separatedBy: "\r\u{1B}[K[").count > 2, "\(drawn.debugDescription.prefix(400))")
        #expect(!drawn.contains("\r["), "a progress line drawn without erasing the last one")
        // … and cleared at the end; standard output (a file) holds no terminal control.
        #expect(Self.screen(drawn).allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty || !$0.contains("[") })
        let printed = try String(contentsOf: output, encoding: .utf8)
        #expect(printed.contains("saved ") && !printed.contains("\u{1B}"))
    }
}
