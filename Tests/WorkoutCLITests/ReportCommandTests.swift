import Foundation
import Testing
import WorkoutSensors

@testable import WorkoutCLI

/// `workout report`, the progress line and the private store, through the built executable.
@Suite("workout report, progress and private store")
struct ReportCommandTests {
    func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func reportWritesOneSelfContainedPage() throws {
        try withTwoRides { db, ids in
            let folder = try temporaryFolder()
            defer { try? FileManager.default.removeItem(at: folder) }
            let page = folder.appendingPathComponent("ride.html").path
            let result = try runCommand(["report", ids[0].uuidString, "--db", db, "--output", page])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("wrote \(page)"))
            let html = try String(contentsOfFile: page, encoding: .utf8)
            #expect(html.hasPrefix("<!DOCTYPE html>"))
            #expect(html.contains(ids[0].uuidString))
            #expect(html.contains("<svg id=\"timeline\""))
            #expect(!html.contains("src=\"http") && !html.contains("href=\"http"))
            // To standard output with `-`: the same page.
            let piped = try runCommand(["report", ids[0].uuidString, "--db", db, "-o", "-"])
            #expect(piped.stdout == html)
        }
    }

    @Test func reportOfAnUnknownWorkoutOrImpossibleHeartRatesFails() throws {
        try withTwoRides { db, _ in
            let missing = UUID()
            let unknown = try runCommand(["report", missing.uuidString, "--db", db, "-o", "-"])
            #expect(unknown.status != 0)
            #expect(unknown.stdout.isEmpty)
            #expect(unknown.stderr.contains(missing.uuidString) && unknown.stderr.contains("workout list"))
            let zones = try runCommand([
                "report", missing.uuidString, "--db", db, "--max-heart-rate", "50", "--resting-heart-rate", "60",
            ])
            #expect(zones.status != 0)
            #expect(zones.stderr.contains("maximum heart rate"))
        }
    }

    @Test func heartRatesNoHeartCanHaveAreRefusedWithoutACrash() throws {
        try withTwoRides { db, ids in
            for (maximum, resting) in [("1e300", "60"), ("100", "1e300"), ("190", "0.001"), ("400", "60")] {
                let result = try runCommand([
                    "report", ids[0].uuidString, "--db", db, "-o", "-", "--max-heart-rate", maximum,
                    "--resting-heart-rate", resting,
                ])
                #expect(
                    result.status == 64, "--max-heart-rate \(maximum) --resting-heart-rate \(resting): \(result.stderr)"
                )
                #expect(result.stderr.contains("heart rate"))
                #expect(result.stdout.isEmpty)
            }
        }
    }

    // MARK: progress

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
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try runCommand(["replay", "pool-swim", "--db", folder.appendingPathComponent("s.sqlite").path])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("\r") && !result.stderr.contains("\u{1B}"), "\(result.stderr.debugDescription)")
        #expect(!result.stdout.contains("\r") && !result.stdout.contains("\u{1B}"))
    }

    @Test func progressOnATerminalErasesEachLineBeforeDrawing() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let terminal = try PseudoTerminal()
        let slave = try #require(FileHandle(forWritingAtPath: terminal.path))
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("workout").path),
            directory.pathComponents.count > 1
        {
            directory.deleteLastPathComponent()
        }
        let output = folder.appendingPathComponent("stdout")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let stdout = try FileHandle(forWritingTo: output)
        let process = Process()
        process.executableURL = directory.appendingPathComponent("workout")
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

    // MARK: private store

    @Test func aWorldReadableStoreIsReportedWithTheFixAndLeftAlone() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("workout-engine")
        let db = data.appendingPathComponent("workouts.sqlite").path
        let fresh = try runCommand(["list", "--db", db])
        #expect(fresh.status == 0)
        #expect(!fresh.stderr.contains("warning"), "\(fresh.stderr)")
        let mode = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        #expect(mode(data.path) == 0o700)
        #expect(mode(db) == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db)
        let exposed = try runCommand(["list", "--db", db])
        #expect(exposed.status == 0)
        #expect(exposed.stderr.contains("warning: the workout store can be read by other users"))
        #expect(exposed.stderr.contains("chmod 600 \(db)"))
        #expect(mode(db) == 0o644)
    }

    @Test func theFixTheWarningGivesWorksAfterTheCommandHasExited() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let data = folder.appendingPathComponent("workout-engine")
        let db = data.appendingPathComponent("workouts.sqlite").path
        #expect(try runCommand(["list", "--db", db]).status == 0)
        let mode = { (path: String) in
            (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue
        }
        // As earlier versions left the store.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: data.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: db)
        let exposed = try runCommand(["list", "--db", db])
        let warning = try #require(exposed.stderr.split(separator: "\n").first { $0.hasPrefix("warning:") })
        let command = try #require(warning.components(separatedBy: "run: ").last)
        // The user runs it once `list` has exited (and its WAL and shared-memory files are gone).
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", command]
        let errors = Pipe()
        shell.standardError = errors
        try shell.run()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0, "\(command): \(complaint)")
        #expect(mode(db) == 0o600)
        #expect(mode(data.path) == 0o700)
        let after = try runCommand(["list", "--db", db])
        #expect(!after.stderr.contains("warning"), "\(after.stderr)")
    }
}
