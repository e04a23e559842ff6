"""The built-in stop words: words too common in chat to say what a memory is about.

Compact on purpose (about 200 English and 120 Chinese entries): articles, auxiliaries,
pronouns, prepositions, conjunctions, question words, fillers and sentence particles.
Content words and numbers stay: a wrong stop
word loses recall for good (tokens are stored), a missing one only costs a little BM25
precision. Entries are lowercase surface forms, checked before stemming; contractions use
a plain apostrophe (``text.py`` normalises the curly one). Part of the stored token
format: changing this list means a new ``TOKENIZER_VERSION`` and a reindex.
"""

from __future__ import annotations

_ENGLISH = """
a about above after again against all also am an and any are aren't as at be because been
before being below between both but by can can't cannot could couldn't did didn't do does
doesn't doing don't down during each either else ever every few for from further had
hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its itself
just let's me might more most must mustn't my myself no nor not now of off on once only or
other ought our ours ourselves out over own same shall shan't she she'd she'll she's
should shouldn't so some such than that that's the their theirs them themselves then
there there's these they they'd they'll they're they've this those though through to too
under until up upon us very was wasn't we we'd we'll we're we've were weren't what what's
whatever when when's whenever where where's whereas wherever whether which while who
who's whoever whom whose why why's will with within without won't would wouldn't yet you
you'd you'll you're you've your yours yourself yourselves
oh ah uh um hmm hey hi hello yeah yes yep ok okay wow lol haha hahaha
anything anyone everything everyone nothing something someone somebody
thing things really very quite much many lot lots
get got gets getting go goes going gone went
"""

_CHINESE = """
的 地 得 了 着 过 是 在 和 与 及 或 而 且 就 都 也 还 又 再 才 只 却 但 但是 而且 并且 因为 所以
如果 虽然 然后 那么 于是 或者 还是 不过 可是 只是 就是 也是 还有
我 你 您 他 她 它 我们 你们 他们 她们 它们 咱 咱们 自己 大家 别人 人家
这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这么 那么 此 其 之
什么 怎么 怎样 怎么样 为什么 为何 哪 哪个 哪些 哪里 哪儿 谁 几 多少 多久 何时 如何 是否
吗 呢 吧 啊 呀 哦 嗯 哈 哈哈 嘛 啦 呗 哎 唉 喔 噢 嘿 么 哟 诶
把 被 让 给 对 向 从 跟 比 为 以 于 由 按 往 朝 到 将
有 没 没有 不 不是 很 太 更 最 挺 非常 特别 比较 有点 一点 一些 一下 一个 个
会 能 要 想 可以 可能 应该 已经 曾经 正在 一直 总是 一起
"""

STOP_WORDS: frozenset[str] = frozenset(_ENGLISH.split() + _CHINESE.split())
