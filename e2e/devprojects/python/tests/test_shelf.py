import os
import subprocess
import sys
import tempfile
import unittest

import shelf


class ParseTest(unittest.TestCase):
    def test_pairs_comments_and_blanks(self):
        text = "# settings\n\nname = shelf\n  size=3  \nname = again\n"
        self.assertEqual(shelf.parse(text), {"name": "again", "size": "3"})

    def test_value_may_hold_equals(self):
        self.assertEqual(shelf.parse("url = a=b\n"), {"url": "a=b"})

    def test_bad_line_names_its_number(self):
        with self.assertRaisesRegex(ValueError, "line 2"):
            shelf.parse("a = 1\nno separator\n")

    def test_dump_round_trips(self):
        data = {"b": "2", "a": "x y", "c": ""}
        self.assertEqual(shelf.parse(shelf.dump(data)), data)
        self.assertTrue(shelf.dump(data).startswith("a = x y\n"))

    def test_dump_refuses_bad_keys(self):
        for key in ["", "a=b", "two\nlines"]:
            with self.subTest(key=key):
                with self.assertRaises(ValueError):
                    shelf.dump({key: "v"})

    def test_packaged_defaults(self):
        self.assertEqual(shelf.defaults()["retries"], "3")


class ShelfOnDiskTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "app.shelf")

    def tearDown(self):
        self.dir.cleanup()

    def test_missing_file_is_empty(self):
        self.assertEqual(shelf.Shelf(self.path).load(), {})

    def test_put_and_delete(self):
        s = shelf.Shelf(self.path)
        s.put("colour", "never")
        s.put("retries", 5)
        self.assertEqual(s.load(), {"colour": "never", "retries": "5"})
        s.delete("colour")
        with open(self.path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "retries = 5\n")

    def test_no_temporary_file_left(self):
        s = shelf.Shelf(self.path)
        for i in range(20):
            s.put(f"k{i}", i)
        self.assertEqual(sorted(os.listdir(self.dir.name)), ["app.shelf"])

    def test_child_interpreter_reads_what_was_written(self):
        shelf.Shelf(self.path).put("greeting", "hello from the parent")
        code = "import shelf, sys; print(shelf.Shelf(sys.argv[1]).load()['greeting'])"
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, "-c", code, self.path], cwd=root,
                             capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "hello from the parent")


if __name__ == "__main__":
    unittest.main()
