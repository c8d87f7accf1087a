"""Small programs per language for the language tests: a+b, runtime error, timeout, memory hog."""

from __future__ import annotations

AB: dict[str, str] = {
    'python': 'a, b = map(int, input().split())\nprint(a + b)\n',
    'cpp': '#include <bits/stdc++.h>\nint main(){long long a,b;std::cin>>a>>b;std::cout<<a+b<<"\\n";}\n',
    'c': '#include <stdio.h>\nint main(void){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a+b);return 0;}\n',
    'java': (
        'import java.util.*;\n'
        'public class Solution {\n'
        '  public static void main(String[] args) {\n'
        '    Scanner s = new Scanner(System.in);\n'
        '    System.out.println(s.nextLong() + s.nextLong());\n'
        '  }\n'
        '}\n'
    ),
    'javascript': (
        "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(BigInt);\n"
        'console.log((a + b).toString());\n'
    ),
    'go': (
        'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar a, b int64\n\tfmt.Scan(&a, &b)\n\tfmt.Println(a + b)\n}\n'
    ),
    'rust': (
        'use std::io::Read;\n'
        'fn main() {\n'
        '    let mut s = String::new();\n'
        '    std::io::stdin().read_to_string(&mut s).unwrap();\n'
        '    let v: Vec<i64> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n'
        '    println!("{}", v[0] + v[1]);\n'
        '}\n'
    ),
    'bash': 'read -r a b\necho $((a + b))\n',
}
"""Read two integers from stdin, print their sum."""

MODE: dict[str, str] = {
    'python': (
        'import sys, time\n'
        'mode = sys.stdin.read().strip()\n'
        "if mode == 'crash':\n    raise SystemExit(3)\n"
        "if mode == 'loop':\n    while True:\n        pass\n"
        "if mode == 'hog':\n    x = bytearray(2 ** 30)\n    print(len(x))\n"
        "print('ok')\n"
    ),
    'cpp': (
        '#include <bits/stdc++.h>\nint main(){std::string m;std::cin>>m;\n'
        'if(m=="crash"){return 3;}\n'
        'if(m=="loop"){volatile unsigned long x=0;for(;;)x++;}\n'
        'if(m=="hog"){std::vector<char> v(1u<<30,1);std::cout<<v[12345]<<"\\n";}\n'
        'std::cout<<"ok\\n";}\n'
    ),
    'c': (
        '#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
        'int main(void){char m[16]={0};if(scanf("%15s",m)!=1)return 2;\n'
        'if(!strcmp(m,"crash")){int *p=NULL;return *p;}\n'
        'if(!strcmp(m,"loop")){volatile unsigned long x=0;for(;;)x++;}\n'
        'if(!strcmp(m,"hog")){size_t n=1u<<30;volatile char *p=malloc(n);if(!p)return 4;'
        'for(size_t i=0;i<n;i+=4096)p[i]=1;printf("%d\\n",p[n-4096]);}\n'
        'puts("ok");return 0;}\n'
    ),
    'java': (
        'import java.util.*;\n'
        'class Main {\n'
        '  public static void main(String[] args) {\n'
        '    String m = new Scanner(System.in).next();\n'
        '    if (m.equals("crash")) { int[] a = new int[1]; System.out.println(a[5]); }\n'
        '    if (m.equals("loop")) { long x = 0; while (true) { x++; } }\n'
        '    if (m.equals("hog")) { List<long[]> l = new ArrayList<>();'
        ' for (int i = 0; i < 4096; i++) l.add(new long[1 << 17]); System.out.println(l.size()); }\n'
        '    System.out.println("ok");\n'
        '  }\n'
        '}\n'
    ),
    'javascript': (
        "const m = require('fs').readFileSync(0, 'utf8').trim();\n"
        "if (m === 'crash') { null.x; }\n"
        "if (m === 'loop') { for (;;) {} }\n"
        "if (m === 'hog') { const a = []; for (;;) a.push(new Array(1 << 20).fill(1.5)); }\n"
        "console.log('ok');\n"
    ),
    'go': (
        'package main\n\nimport "fmt"\n\n'
        'func main() {\n'
        '\tvar m string\n\tfmt.Scan(&m)\n'
        '\tif m == "crash" {\n\t\tvar a []int\n\t\t_ = a[5]\n\t}\n'
        '\tif m == "loop" {\n\t\tx := 0\n\t\tfor {\n\t\t\tx++\n\t\t}\n\t}\n'
        '\tif m == "hog" {\n\t\tvar l [][]byte\n\t\tfor i := 0; i < 4096; i++ {\n'
        '\t\t\tb := make([]byte, 1<<20)\n'
        '\t\t\tfor j := range b {\n\t\t\t\tb[j] = 1\n\t\t\t}\n\t\t\tl = append(l, b)\n\t\t}\n'
        '\t\tfmt.Println(len(l))\n\t}\n'
        '\tfmt.Println("ok")\n}\n'
    ),
    'rust': (
        'use std::io::Read;\n'
        'fn main() {\n'
        '    let mut m = String::new();\n'
        '    std::io::stdin().read_to_string(&mut m).unwrap();\n'
        '    match m.trim() {\n'
        '        "crash" => { let v: Vec<i32> = Vec::new(); println!("{}", v[m.len()]); }\n'
        '        "loop" => loop {},\n'
        '        "hog" => { let v = vec![1u8; 1 << 30]; println!("{}", v[v.len() - 1]); }\n'
        '        _ => {}\n'
        '    }\n'
        '    println!("ok");\n'
        '}\n'
    ),
    'bash': (
        'read -r m\n'
        'if [ "$m" = crash ]; then exit 3; fi\n'
        'if [ "$m" = loop ]; then while :; do :; done; fi\n'
        # dd's 400 MB buffer passes 256 MB within ~0.2 s; growing a bash string took ~1.4 s, and under
        # load sometimes more than the 4 s time limit
        'if [ "$m" = hog ]; then dd if=/dev/zero of=/dev/null bs=400M count=1 2>/dev/null || exit; fi\n'
        'echo ok\n'
    ),
}
"""Read a mode from stdin: ``ok`` prints ok, ``crash`` fails at run time, ``loop`` spins, ``hog`` eats memory."""

COMPILE_ERROR: dict[str, str] = {
    'cpp': 'int main() { return undefined_name; }\n',
    'c': 'int main(void) { return undefined_name; }\n',
    'java': 'public class Main { public static void main(String[] a) { int x = "s"; } }\n',
    'go': 'package main\n\nfunc main() { x := 1 }\n',
    'rust': 'fn main() { let x: i32 = "s"; }\n',
}
"""Programs that do not compile."""
